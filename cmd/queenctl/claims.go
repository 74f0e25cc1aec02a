package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queen-app/queen-app/internal/apiclient"
	"github.com/queen-app/queen-app/internal/apiwire"
	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/dispatch"
	"github.com/queen-app/queen-app/internal/ghrepo"
	"github.com/queen-app/queen-app/internal/plural"
)

// claimsPageSize is the page list and export ask for; tests make it small.
var claimsPageSize = apiwire.MaxLimit

var claimsVerbs = []verb{
	{"list", "[--repo owner/name] [--claims-issue true|false] [--claim WORD] [--json]"},
	{"import", "FILE.jsonl [--repo owner/name] [--source NAME]"},
	{"export", "[--repo owner/name]"},
	{"free", "owner/name#N --reason TEXT [--version N]"},
	{"keep", "owner/name#N --reason TEXT [--version N]"},
	{"delete", "owner/name#N [--reason TEXT]"},
	{"watch", "[--repo owner/name] [--after ID] [--json]"},
}

func runClaims(args []string, stdout, stderr io.Writer) int {
	override := func(what string) func([]string, io.Writer, io.Writer) int {
		return func(args []string, stdout, stderr io.Writer) int { return claimsOverride(what, args, stdout, stderr) }
	}
	return runGroup("claims", claimsVerbs, map[string]func([]string, io.Writer, io.Writer) int{
		"list": claimsList, "import": claimsImport, "export": claimsExport,
		"free": override("free"), "keep": override("keep"), "delete": claimsDelete,
		"watch": claimsWatch,
	}, "", args, stdout, stderr)
}

func claimsSynopsisOf(name string) string { return synopsisOf(claimsVerbs, name) }

// claimsAPI is the API client from QUEEN_API_URL and QUEEN_API_TOKEN; on
// bad or missing values it prints a line naming each variable.
func claimsAPI(name string, stderr io.Writer) (*apiclient.Client, bool) {
	cfg, err := config.Load(config.CLI, os.Getenv)
	if err == nil {
		var c *apiclient.Client
		if c, err = newAPIClient(cfg, 60*time.Second); err == nil {
			return c, true
		}
	}
	printErr(stderr, name, err)
	return nil, false
}

// refCommand runs the common start of a command that takes one
// owner/name#N: parse fs over args, run check (nil for none) on the flags,
// read the reference and connect to the API, writing as queenctl. A code of
// 0 or more means the command ends with that exit status.
func refCommand(name, synopsis string, fs *flag.FlagSet, args []string, check func() error, stdout, stderr io.Writer) (
	c *apiclient.Client, repo string, issue int64, code int) {
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("want exactly one owner/name#N")
	}
	if err == nil && check != nil {
		err = check()
	}
	if err == nil {
		repo, issue, err = parseClaimRef(pos[0])
	}
	if err != nil {
		return nil, "", 0, usageError(err, name, synopsis, fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return nil, "", 0, 2
	}
	c.Source = "queenctl"
	return c, repo, issue, -1
}

// parseClaimRef reads "owner/name#N".
func parseClaimRef(s string) (repo string, issue int64, err error) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return "", 0, fmt.Errorf("%q is not owner/name#N", s)
	}
	repo = s[:i]
	if !ghrepo.Valid(repo) {
		return "", 0, fmt.Errorf("%q: repo %q is not owner/name", s, repo)
	}
	issue, err = strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || issue < 1 {
		return "", 0, fmt.Errorf("%q: issue %q is not a positive number", s, s[i+1:])
	}
	return repo, issue, nil
}

// boolFlag is an optional true|false flag.
type boolFlag struct{ v *bool }

func (b *boolFlag) String() string {
	if b.v == nil {
		return ""
	}
	return strconv.FormatBool(*b.v)
}

func (b *boolFlag) Set(s string) error {
	switch s {
	case "true", "false":
		v := s == "true"
		b.v = &v
		return nil
	}
	return errors.New("must be true or false")
}

func claimsList(args []string, stdout, stderr io.Writer) int {
	const name = "claims list"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repo := fs.String("repo", "", "only this owner/name (all repositories when absent)")
	var claimsIssue boolFlag
	fs.Var(&claimsIssue, "claims-issue", "only rows whose claims_issue is `true|false`")
	claim := fs.String("claim", "", "only rows with this claim `word` (running, accepted, rejected, awaitingReview, failed, cancelled)")
	asJSON := fs.Bool("json", false, `print {"claims": [VIEW, ...]} instead of the table`)
	if err := parseFlags(fs, args, nil); err != nil {
		return usageError(err, name, claimsSynopsisOf("list"), fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	views, err := c.ListAll(context.Background(), apiclient.ListOptions{
		Repo: *repo, ClaimsIssue: claimsIssue.v, Claim: *claim, Limit: claimsPageSize})
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	if *asJSON {
		if views == nil {
			views = []dispatch.View{}
		}
		if err := writeJSON(stdout, struct {
			Claims []dispatch.View `json:"claims"`
		}{views}); err != nil {
			fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tCLAIM\tCLAIMS_ISSUE\tLIVE\tSTAGE\tHELD\tSEND_BACK\tACCEPT\tDECIDED")
	for _, v := range views {
		fmt.Fprintf(tw, "%s#%d\t%s\t%t\t%t\t%s\t%d\t%s\t%s\t%s\n", v.Repo, v.Issue, v.Claim, v.ClaimsIssue, v.Live,
			v.Stage, len(v.HeldPaths), orDash(v.SendBackClaim), orDash(v.AcceptClaim), decided(v))
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	fmt.Fprintln(stdout, plural.Rows(len(views)))
	return 0
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// decided names an applied or shadow free in a few words.
func decided(v dispatch.View) string {
	switch {
	case v.Freed != nil:
		return "freed by " + v.Freed.Rule
	case v.WouldFree != nil:
		return "would free by " + v.WouldFree.Rule
	}
	return "-"
}

// importOutcomeOrder lists the outcomes in the summary, known ones first.
var importOutcomeOrder = []string{"created", "updated", "unchanged"}

func claimsImport(args []string, stdout, stderr io.Writer) int {
	const name = "claims import"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repoFlag := fs.String("repo", "", "owner/name for lines that carry no repo")
	source := fs.String("source", "queenctl-import", "writer `NAME` recorded in the audit")
	pos, err := parseArgs(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = errors.New("want exactly one FILE.jsonl")
	case *repoFlag != "" && !ghrepo.Valid(*repoFlag):
		err = fmt.Errorf("--repo %q is not owner/name", *repoFlag)
	case !apiwire.ValidSource(*source):
		err = fmt.Errorf("--source %q must be 1 to 64 letters, digits or ._:@/-", *source)
	}
	if err != nil {
		return usageError(err, name, claimsSynopsisOf("import"), fs, stdout, stderr)
	}
	file := pos[0]
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	defer f.Close()
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	c.Source = *source

	im := importer{c: c, out: stdout, defRepo: *repoFlag, seen: map[string]int{}, ignored: map[string]bool{}, counts: map[string]int{}}
	rd := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, rerr := rd.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			fmt.Fprintf(stderr, "queenctl: %s: %s: %v\n", name, file, rerr)
			return 1
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if err := im.line(n, line); err != nil {
				fmt.Fprintf(stderr, "queenctl: %s: line %d: %v; stopped\n", name, n, err)
				return 1
			}
		}
		if rerr != nil {
			break
		}
	}
	im.summary()
	if len(im.failed) > 0 {
		noun := "lines"
		if len(im.failed) == 1 {
			noun = "line"
		}
		fmt.Fprintf(stderr, "queenctl: %s: %s: %d %s failed (%s)\n", name, file, len(im.failed), noun, strings.Join(im.failed, ", "))
		return 1
	}
	return 0
}

type importer struct {
	c        *apiclient.Client
	out      io.Writer
	defRepo  string
	seen     map[string]int // row key -> first line
	ignored  map[string]bool
	counts   map[string]int
	failed   []string // line numbers
	warnings int      // the API's warnings on rows it kept
}

// line imports one line of the dump. A bad line is reported and counted;
// only a failure every later line would share (the API down, the token
// refused) is returned, to stop the import.
func (im *importer) line(n int, data []byte) error {
	fail := func(where, msg string) {
		fmt.Fprintf(im.out, "line %d%s: failed: %s\n", n, where, msg)
		im.failed = append(im.failed, strconv.Itoa(n))
	}
	if n == 1 {
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	}
	d, err := parseDumpLine(data, im.defRepo)
	if err != nil {
		fail("", err.Error())
		return nil
	}
	key := d.repo + "#" + strconv.FormatInt(d.issue, 10)
	where := " " + key
	if first, dup := im.seen[key]; dup {
		fail(where, fmt.Sprintf("duplicate row (first on line %d)", first))
		return nil
	}
	im.seen[key] = n
	for _, name := range d.ignored {
		im.ignored[name] = true
	}
	res, err := im.c.Put(context.Background(), d.repo, d.issue, d.patch)
	if err != nil {
		var ae *apiclient.Error
		if errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != http.StatusUnauthorized &&
			ae.Status != http.StatusForbidden && ae.Status != http.StatusTooManyRequests {
			fail(where, ae.Message)
			return nil
		}
		return err
	}
	fmt.Fprintf(im.out, "line %d%s: %s\n", n, where, res.Outcome)
	im.counts[res.Outcome]++
	for _, w := range res.Warnings {
		fmt.Fprintf(im.out, "line %d%s: warning: %s\n", n, where, w.Message)
		im.warnings++
	}
	return nil
}

// dumpLine is one row of the Queen's dump as the import writes it: the
// Queen-owned columns in patch, the other columns ignored (sorted).
type dumpLine struct {
	repo    string
	issue   int64
	patch   map[string]json.RawMessage
	ignored []string
}

// parseDumpLine reads one line of the dump; defRepo (--repo) stands for a
// missing repo. An error is the line's failure as the report shows it.
func parseDumpLine(data []byte, defRepo string) (dumpLine, error) {
	obj, err := dispatch.DecodeObject(data)
	if err != nil {
		return dumpLine{}, err
	}
	repo := defRepo
	if raw, ok := obj["repo"]; ok {
		if json.Unmarshal(raw, &repo) != nil || !ghrepo.Valid(repo) {
			// Compact: whitespace inside the value (a \r) must not break the report's line.
			var shown bytes.Buffer
			_ = json.Compact(&shown, raw) // raw is valid JSON: DecodeObject took it
			return dumpLine{}, fmt.Errorf("repo: %s is not \"owner/name\"", shown.Bytes())
		}
	} else if repo == "" {
		return dumpLine{}, errors.New("repo: is required (or give --repo owner/name)")
	}
	raw, ok := obj["issue"]
	if !ok {
		return dumpLine{}, errors.New("issue: is required")
	}
	issue, err := dispatch.Issue(raw)
	if err != nil {
		return dumpLine{}, fmt.Errorf("issue: %w", err)
	}
	d := dumpLine{repo: repo, issue: issue, patch: make(map[string]json.RawMessage, len(obj))}
	for name, v := range obj {
		switch {
		case dispatch.IsQueenField(name):
			d.patch[name] = v
		case name != "repo" && name != "issue":
			d.ignored = append(d.ignored, name)
		}
	}
	sort.Strings(d.ignored)
	return d, nil
}

func (im *importer) summary() {
	if len(im.ignored) > 0 {
		names := make([]string, 0, len(im.ignored))
		for n := range im.ignored {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(im.out, "ignored columns: %s\n", strings.Join(names, ", "))
	}
	var parts []string
	done := map[string]bool{}
	for _, o := range importOutcomeOrder {
		if im.counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", im.counts[o], o))
		}
		done[o] = true
	}
	var rest []string
	for o := range im.counts {
		if !done[o] {
			rest = append(rest, o)
		}
	}
	sort.Strings(rest)
	for _, o := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", im.counts[o], o))
	}
	if len(im.failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", len(im.failed)))
	}
	if im.warnings > 0 {
		parts = append(parts, plural.Count(im.warnings, "warning", "warnings"))
	}
	if len(parts) == 0 {
		parts = []string{"no rows"}
	}
	fmt.Fprintf(im.out, "imported: %s\n", strings.Join(parts, ", "))
}

func claimsExport(args []string, stdout, stderr io.Writer) int {
	const name = "claims export"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	repo := fs.String("repo", "", "only this owner/name (all repositories when absent)")
	if err := parseFlags(fs, args, nil); err != nil {
		return usageError(err, name, claimsSynopsisOf("export"), fs, stdout, stderr)
	}
	c, ok := claimsAPI(name, stderr)
	if !ok {
		return 2
	}
	bw := bufio.NewWriter(stdout)
	enc := json.NewEncoder(bw)
	o := apiclient.ListOptions{Repo: *repo, Limit: claimsPageSize}
	for {
		page, err := c.List(context.Background(), o)
		if err == nil {
			for _, v := range page.Claims {
				if err = enc.Encode(v); err != nil {
					break
				}
			}
		}
		if err != nil {
			_ = bw.Flush()
			fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
			return 1
		}
		if page.NextCursor == "" || page.NextCursor == o.Cursor {
			break
		}
		o.Cursor = page.NextCursor
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %v\n", name, err)
		return 1
	}
	return 0
}

func claimsOverride(what string, args []string, stdout, stderr io.Writer) int {
	name := "claims " + what
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	reason := fs.String("reason", "", "why, for the audit (required)")
	version := fs.Int64("version", 0, "the row version the override was decided on (refused if the row moved on)")
	c, repo, issue, code := refCommand(name, claimsSynopsisOf(what), fs, args, func() error {
		if strings.TrimSpace(*reason) == "" {
			return errors.New("--reason is required")
		}
		return nil
	}, stdout, stderr)
	if code >= 0 {
		return code
	}
	do := c.Free
	if what == "keep" {
		do = c.Keep
	}
	res, err := do(context.Background(), repo, issue, *reason, *version)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %s#%d: %v\n", name, repo, issue, err)
		return 1
	}
	v := res.View
	fmt.Fprintf(stdout, "%s#%d: %s (claim %s, claims_issue %t, live %t, stage %s, %d paths held)\n",
		v.Repo, v.Issue, res.Outcome, v.Claim, v.ClaimsIssue, v.Live, v.Stage, len(v.HeldPaths))
	return 0
}

func claimsDelete(args []string, stdout, stderr io.Writer) int {
	const name = "claims delete"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	reason := fs.String("reason", "", "why, for the audit")
	c, repo, issue, code := refCommand(name, claimsSynopsisOf("delete"), fs, args, nil, stdout, stderr)
	if code >= 0 {
		return code
	}
	res, err := c.Delete(context.Background(), repo, issue, *reason)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: %s: %s#%d: %v\n", name, repo, issue, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s#%d: %s (version %d)\n", res.Repo, res.Issue, res.Outcome, res.Version)
	return 0
}
