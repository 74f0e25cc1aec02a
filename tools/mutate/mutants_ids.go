package main

const (
	ghrepoFile    = "internal/ghrepo/ghrepo.go"
	branchFile    = "internal/dispatch/branch.go"
	charclassFile = "internal/charclass/charclass.go"
)

// idMutants break the identifier checks every delivery passes (a
// repository, a queen-<N> branch, a byte class) that replaced regexps;
// D38-D41 break the heads and branches.
var idMutants = []Mutant{
	{ID: "I01", File: ghrepoFile, Tests: "^TestValid", Old: "ownerChars.Match(owner, 1, 39) && owner[0] != '-' &&", New: "ownerChars.Match(owner, 1, 39) &&", Desc: "an owner may start with a hyphen"},
	{ID: "I02", File: ghrepoFile, Tests: "^TestValid", Old: `!strings.Contains(name, "..") && name != "."`, New: `!strings.Contains(name, "..")`, Desc: `a repository may be named "."`},
	{ID: "I03", File: ghrepoFile, Tests: "^TestValid", Old: "nameChars.Match(name, 1, 100)", New: "nameChars.Match(name, 1, 101)", Desc: "a name may be 101 bytes long"},
	{ID: "I04", File: branchFile, Tests: "^TestBranchIsAlwaysQueenIssue$|^TestIssueOfBranchIsTheReference$", Old: "!digits.Match(n, 1, 10) || n[0] == '0'", New: "!digits.Match(n, 1, 11) || n[0] == '0'", Desc: "an issue number of 11 digits counts"},
	{ID: "I05", File: charclassFile, Old: "if len(s) < min || len(s) > max {", New: "if len(s) > max {", Desc: "a string shorter than its least length matches"},
	{ID: "I06", File: charclassFile, Old: "if i+2 < len(spec) && spec[i+1] == '-' {", New: "if i+1 < len(spec) && spec[i+1] == '-' {", Desc: "a '-' last in a spec is a range's hyphen, not itself"},
}
