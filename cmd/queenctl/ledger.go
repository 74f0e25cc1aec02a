package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queen-app/queen-app/internal/config"
	"github.com/queen-app/queen-app/internal/ledger"
	"github.com/queen-app/queen-app/internal/redisconn"
	"github.com/queen-app/queen-app/internal/version"
)

var ledgerVerbs = []verb{
	{"init", ""},
	{"status", ""},
	{"backup", "FILE (- for stdout)"},
	{"restore", "[--force] FILE"},
}

const ledgerNote = `These talk to Redis itself (QUEEN_REDIS_URL, with QUEEN_REDIS_PASSWORD and the
sentinel password where needed), not to the claims API. init creates the
ledger once: the webhook and the worker serve only a ledger that exists, so
that a Redis that lost its data is an outage, never "every issue is free".`

// ledgerTimeout bounds init and status; backup and restore run as long as
// the ledger's size needs.
const ledgerTimeout = 30 * time.Second

func runLedger(args []string, stdout, stderr io.Writer) int {
	return runGroup("ledger", ledgerVerbs, map[string]func([]string, io.Writer, io.Writer) int{
		"init": ledgerInit, "status": ledgerStatus, "backup": ledgerBackup, "restore": ledgerRestore,
	}, ledgerNote, args, stdout, stderr)
}

// releaseName is what the ledger records as having created or backed it up.
func releaseName() string { return "queenctl " + version.Get().Version }

// runLedgerVerb parses name's arguments (wantArgs positionals), connects
// to the ledger's Redis and runs fn within timeout (0: none) with the
// positionals; fn returns the exit status. The ledger is not guarded: these
// commands work whatever state it is in.
func runLedgerVerb(name string, fs *flag.FlagSet, args []string, wantArgs int, timeout time.Duration, stdout, stderr io.Writer,
	fn func(ctx context.Context, led *ledger.Ledger, rdb redis.UniversalClient, pos []string) int) int {
	synopsis := synopsisOf(ledgerVerbs, strings.TrimPrefix(name, "ledger "))
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != wantArgs {
		if len(pos) > wantArgs {
			err = fmt.Errorf("unexpected argument %q", pos[wantArgs])
		} else {
			err = errors.New("want FILE")
		}
	}
	if err != nil {
		return usageError(err, name, synopsis, fs, stdout, stderr)
	}
	cfg, err := config.Load(config.LedgerTool, os.Getenv)
	if err != nil {
		printErr(stderr, name, err)
		return 2
	}
	spec, err := cfg.Redis()
	if err != nil {
		printErr(stderr, name, err)
		return 2
	}
	rdb := redisconn.New(spec)
	defer rdb.Close()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return fn(ctx, ledger.New(rdb, ledger.Options{AuditMaxLen: cfg.AuditMaxLen}), rdb, pos)
}

// ledgerFail prints err for name and returns the failure's exit status.
func ledgerFail(stderr io.Writer, name string, err error) int {
	printErr(stderr, name, err)
	return 1
}

func ledgerInit(args []string, stdout, stderr io.Writer) int {
	const name = "ledger init"
	return runLedgerVerb(name, flag.NewFlagSet(name, flag.ContinueOnError), args, 0, ledgerTimeout, stdout, stderr,
		func(ctx context.Context, led *ledger.Ledger, _ redis.UniversalClient, _ []string) int {
			id, created, err := led.Init(ctx, releaseName())
			if err != nil {
				return ledgerFail(stderr, name, err)
			}
			if created {
				fmt.Fprintf(stdout, "created ledger %s (schema %d)\n", id.ID, ledger.SchemaVersion)
			} else {
				fmt.Fprintf(stdout, "ledger %s exists (created %s by %s): nothing to do\n",
					id.ID, id.CreatedAt.UTC().Format(time.RFC3339), orUnknown(id.CreatedBy))
			}
			return 0
		})
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func ledgerStatus(args []string, stdout, stderr io.Writer) int {
	const name = "ledger status"
	return runLedgerVerb(name, flag.NewFlagSet(name, flag.ContinueOnError), args, 0, ledgerTimeout, stdout, stderr,
		func(ctx context.Context, led *ledger.Ledger, rdb redis.UniversalClient, _ []string) int {
			st, err := led.ReadStatus(ctx)
			if err != nil {
				return ledgerFail(stderr, name, err)
			}
			writeLedgerStatus(stdout, st, redisconn.ReadSettings(ctx, rdb))
			if st.Identity == nil {
				return 1 // a Redis without a ledger: scripts see it
			}
			return 0
		})
}

func writeLedgerStatus(w io.Writer, st ledger.Status, set redisconn.Settings) {
	switch {
	case st.Identity != nil:
		fmt.Fprintf(w, "ledger:        %s (created %s by %s)\n", st.Identity.ID,
			st.Identity.CreatedAt.UTC().Format(time.RFC3339), orUnknown(st.Identity.CreatedBy))
	case st.Empty():
		fmt.Fprintln(w, "ledger:        none: this Redis is empty (queenctl ledger init, or ledger restore FILE)")
	case st.Legacy():
		fmt.Fprintln(w, "ledger:        written before identities: the next start of the webhook or worker adopts it")
	default:
		fmt.Fprintln(w, "ledger:        missing: rows are here but not the ledger's identity (restore a backup with --force)")
	}
	schema := fmt.Sprintf("%d (this release knows %d)", st.Schema, ledger.SchemaVersion)
	if st.Schema > ledger.SchemaVersion {
		schema += ": written by a newer release"
	}
	fmt.Fprintf(w, "schema:        %s\n", schema)
	fmt.Fprintf(w, "rows:          %d in %d repositories\n", st.Rows, st.Repos)
	fmt.Fprintf(w, "audit entries: %d\n", st.AuditEntries)
	fmt.Fprintf(w, "redis:         %s\n", set)
}

func ledgerBackup(args []string, stdout, stderr io.Writer) int {
	const name = "ledger backup"
	return runLedgerVerb(name, flag.NewFlagSet(name, flag.ContinueOnError), args, 1, 0, stdout, stderr,
		func(ctx context.Context, led *ledger.Ledger, _ redis.UniversalClient, pos []string) int {
			if pos[0] == "-" {
				rep, err := led.Backup(ctx, stdout, releaseName())
				if err != nil {
					return ledgerFail(stderr, name, err)
				}
				fmt.Fprintln(stderr, backupLine(rep))
				return 0
			}
			// Written beside the target and renamed: a failed backup never
			// leaves a file where the last good one was.
			tmp, err := os.CreateTemp(filepath.Dir(pos[0]), "."+filepath.Base(pos[0])+".*")
			if err != nil {
				return ledgerFail(stderr, name, err)
			}
			defer os.Remove(tmp.Name())
			rep, err := led.Backup(ctx, tmp, releaseName())
			if err == nil {
				err = tmp.Sync()
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), pos[0])
			}
			if err != nil {
				return ledgerFail(stderr, name, err)
			}
			fmt.Fprintf(stdout, "%s to %s\n", backupLine(rep), pos[0])
			return 0
		})
}

// ledgerOf names the ledger a backup holds.
func ledgerOf(h ledger.BackupHeader) string {
	if h.Ledger == nil {
		return "none"
	}
	return h.Ledger.ID
}

func backupLine(rep ledger.BackupReport) string {
	return fmt.Sprintf("backed up ledger %s (schema %d): %d rows, %d keys, %d audit entries",
		ledgerOf(rep.Header), rep.Header.Schema, rep.Rows, rep.Keys, rep.Entries)
}

func ledgerRestore(args []string, stdout, stderr io.Writer) int {
	const name = "ledger restore"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	force := fs.Bool("force", false, "delete the ledger this Redis holds first (a restore over a replaced or damaged ledger)")
	return runLedgerVerb(name, fs, args, 1, 0, stdout, stderr,
		func(ctx context.Context, led *ledger.Ledger, _ redis.UniversalClient, pos []string) int {
			rep, err := led.Restore(ctx, pos[0], ledger.RestoreOptions{Force: *force})
			if err != nil {
				return ledgerFail(stderr, name, err)
			}
			fmt.Fprintf(stdout, "restored ledger %s (schema %d, taken %s): %d rows, %d keys, %d audit entries; "+
				"the webhook and the worker serve it again within %s\n",
				ledgerOf(rep.Header), rep.Header.Schema, rep.Header.TakenAt.UTC().Format(time.RFC3339),
				rep.Rows, rep.Keys, rep.Entries, ledger.CheckEvery)
			return 0
		})
}
