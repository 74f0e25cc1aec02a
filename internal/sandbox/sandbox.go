package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/queen-app/queen-app/internal/ghrepo"
)

// Defaults of Options.
const (
	DefaultRepo         = "hive/t27"
	DefaultInstallation = 42
)

// Options of Start; zero values take the defaults.
type Options struct {
	// Dir holds the repositories; "" makes a temporary folder that Close
	// removes.
	Dir          string
	Repo         string // the repository the App is installed on, DefaultRepo
	Installation int64  // its installation id, DefaultInstallation
	ExportToken  string // the export's bearer token; "" makes a random one
}

// Sandbox is GitHub and the Queen's export for one repository, wired as in
// production: the App is installed on Repo; GitHub's git serves Repo to the
// App's live installation tokens; GitHub's REST view of Repo's branches is
// that git repository's refs; the export serves the queen-N branches of
// its own clone of it.
type Sandbox struct {
	Repo         string
	Installation int64
	GitHub       *GitHub
	Git          *Remote // GitHub's git for Repo
	ExportWork   *Work   // the export's repository: a clone of Git
	Export       *Export

	dir       string
	removeDir bool
}

// Start assembles a sandbox; Close stops it.
func Start(o Options) (sb *Sandbox, err error) {
	if o.Repo == "" {
		o.Repo = DefaultRepo
	}
	if !ghrepo.Valid(o.Repo) {
		return nil, fmt.Errorf("sandbox: repo %q is not owner/name", o.Repo)
	}
	if o.Installation == 0 {
		o.Installation = DefaultInstallation
	}
	if o.ExportToken == "" {
		o.ExportToken = "sandbox-export-" + randomHex(12)
	}
	s := &Sandbox{Repo: o.Repo, Installation: o.Installation, dir: o.Dir}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "queen-sandbox-"); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		s.removeDir = true
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.GitHub, err = NewGitHub(); err != nil {
		return nil, err
	}
	owner, _ := ghrepo.Split(o.Repo)
	s.GitHub.AddInstallation(o.Installation, owner, o.Repo)
	s.Git, err = NewRemote(filepath.Join(s.dir, "github"), RemoteConfig{
		Repo: o.Repo, Token: "sandbox-git-" + randomHex(12), Accept: s.GitHub.LiveToken})
	if err != nil {
		return nil, err
	}
	s.GitHub.LinkRemote(o.Repo, s.Git)
	if s.ExportWork, err = s.Git.Clone(filepath.Join(s.dir, "export")); err != nil {
		return nil, err
	}
	if s.Export, err = NewExport(o.ExportToken, s.ExportWork); err != nil {
		return nil, err
	}
	return s, nil
}

// Close stops every server and removes the folder Start made.
func (s *Sandbox) Close() {
	if s.Export != nil {
		s.Export.Close()
	}
	if s.Git != nil {
		s.Git.Close()
	}
	if s.GitHub != nil {
		s.GitHub.Close()
	}
	if s.removeDir {
		_ = os.RemoveAll(s.dir)
	}
}

// GitHubEnv is the App's side of the configuration: the GITHUB_* variables
// of webhook and worker. GraphQL is left to be derived from GITHUB_API_URL,
// so a proxy given as GITHUB_API_URL sees it too.
func (s *Sandbox) GitHubEnv() map[string]string {
	return map[string]string{
		"GITHUB_APP_ID":          strconv.FormatInt(s.GitHub.AppID(), 10),
		"GITHUB_APP_PRIVATE_KEY": string(s.GitHub.Key()),
		"GITHUB_API_URL":         s.GitHub.URL(),
		"GITHUB_GIT_URL":         s.Git.URL,
	}
}

// ExportEnv is the worker's export push configuration.
func (s *Sandbox) ExportEnv() map[string]string {
	return map[string]string{
		"QUEEN_EXPORT_URL":   s.Export.URL,
		"QUEEN_EXPORT_TOKEN": s.Export.Token,
		"QUEEN_EXPORT_REPO":  s.Repo,
	}
}

// ExportBranch is a bee's work as the export holds it: queen-<issue> from
// master with one commit of files. It returns the branch's head.
func (s *Sandbox) ExportBranch(issue int64, files map[string]string) (string, error) {
	if issue < 1 {
		return "", errors.New("sandbox: issue must be positive")
	}
	b := "queen-" + strconv.FormatInt(issue, 10)
	// b may be checked out: free it to move.
	if _, err := s.ExportWork.Git("checkout", "--quiet", "--detach"); err != nil {
		return "", err
	}
	if err := s.ExportWork.Branch(b, "origin/master"); err != nil {
		return "", err
	}
	return s.ExportWork.Commit(b, files, fmt.Sprintf("bee work on #%d", issue))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
