// Package usage makes queen-app's binaries explain themselves: -h/--help
// says what a binary does, the environment variables it reads (from
// config.Vars, required ones marked) and an example; --version says which
// build it is. Neither needs any variable set.
package usage

import (
	"fmt"
	"io"
	"strings"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/version"
)

// Binary describes one binary for its help.
type Binary struct {
	Name    string
	Usage   string        // the synopsis after the name
	About   string        // what it does, in a few sentences
	Body    string        // more text after About (e.g. the commands), or ""
	Roles   []config.Role // the roles whose variables it reads
	Example string        // one command, shell syntax
	// CheckEnv reads the variables the binary takes beyond config's, so
	// that their errors are listed with config's, all at once; nil for none.
	CheckEnv func(getenv func(string) string) error
}

// Version is the --version line.
func (b Binary) Version() string { return version.Get().String(b.Name) }

// WriteHelp writes the whole help.
func (b Binary) WriteHelp(w io.Writer) error {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n", b.Name, b.Usage, strings.TrimSpace(b.About))
	if b.Body != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(b.Body, "\n"))
	}
	for _, role := range b.Roles {
		heading := "Environment"
		if len(b.Roles) > 1 {
			heading += " of " + role.String()
		}
		fmt.Fprintf(w, "\n%s (* = required):\n", heading)
		if err := config.WriteVars(w, role); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nA bad or missing value stops the binary with one line naming each such variable, all of them at once.\n"+
		"Every secret (password, token, webhook secret) must be at least %d characters. On/off variables also\n"+
		"take true/false or 1/0.\n", config.MinSecretLen)
	if b.Example != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", indent(b.Example))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", b.Version())
	return err
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// Args handles the arguments of a binary whose settings all come from the
// environment: none runs it (exit false); -h/--help and --version print to
// stdout and exit 0; anything else is a usage error, exit 2.
func (b Binary) Args(args []string, stdout, stderr io.Writer) (code int, exit bool) {
	if len(args) == 0 {
		return 0, false
	}
	if len(args) == 1 {
		if IsHelp(args[0]) {
			if err := b.WriteHelp(stdout); err != nil {
				return 1, true
			}
			return 0, true
		}
		if IsVersion(args[0]) {
			fmt.Fprintln(stdout, b.Version())
			return 0, true
		}
	}
	fmt.Fprintf(stderr, "%s: unexpected argument %q: settings come from the environment (%s --help lists them)\n",
		b.Name, args[0], b.Name)
	return 2, true
}

// IsHelp reports whether arg asks for the help.
func IsHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// IsVersion reports whether arg asks for the version.
func IsVersion(arg string) bool { return arg == "--version" || arg == "-version" || arg == "version" }
