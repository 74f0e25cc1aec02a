// Package ghrepo is a GitHub repository's identity. GitHub compares owner
// and repository names without regard to case, so "Queen/T27" and
// "queen/t27" are one repository: Key is the canonical form every store and
// lookup uses, while the spelling a writer gave is kept for display.
//
// A row written as Queen/T27#42 and a webhook naming queen/t27 once never
// met, so the claim was never freed; Key is why they meet now.
package ghrepo

import (
	"fmt"
	"strings"

	"github.com/queen-app/queen-app/internal/charclass"
)

// GitHub's limits: an owner is 1 to 39 letters, digits or hyphens, not
// starting with a hyphen; a name is 1 to 100 of letters, digits, ".", "-"
// and "_", and neither "." nor "..". The webhook checks one on every
// delivery (charclass says why not regexp).
var (
	ownerChars = charclass.New("A-Za-z0-9-")
	nameChars  = charclass.New("A-Za-z0-9._-")
)

// Valid reports whether s is an "owner/name" GitHub would accept.
func Valid(s string) bool {
	owner, name, _ := strings.Cut(s, "/")
	return ownerChars.Match(owner, 1, 39) && owner[0] != '-' &&
		nameChars.Match(name, 1, 100) && !strings.Contains(name, "..") && name != "."
}

// Check returns an error naming s when it is not Valid.
func Check(s string) error {
	if !Valid(s) {
		return fmt.Errorf("%q is not owner/name", s)
	}
	return nil
}

// Key is the canonical form of a valid full name: lower case.
func Key(s string) string { return strings.ToLower(s) }

// Same reports whether a and b name one repository.
func Same(a, b string) bool { return strings.EqualFold(a, b) }

// Split returns the owner and the name of "owner/name".
func Split(s string) (owner, name string) {
	owner, name, _ = strings.Cut(s, "/")
	return owner, name
}
