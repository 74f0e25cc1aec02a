package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/queen-app/queen-app/internal/replay"
)

const replaySynopsis = "FILE [--json]"

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the machine form instead of the table")
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("want exactly one FILE")
	}
	if err != nil {
		return usageError(err, "replay", replaySynopsis, fs, stdout, stderr)
	}
	file := pos[0]
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: replay: %v\n", err)
		return 1
	}
	snap, err := replay.Parse(data)
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: replay %s: %v\n", file, err)
		return 1
	}
	rep := replay.Evaluate(snap)
	switch {
	case *asJSON:
		err = replay.WriteJSON(stdout, rep)
	case isTerminal(stdout):
		// Hundreds of rows scroll the summary away: say it first too.
		if err = replay.WriteSummary(stdout, rep); err == nil {
			fmt.Fprintln(stdout)
			err = replay.WriteTable(stdout, rep)
		}
	default:
		err = replay.WriteTable(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "queenctl: replay: %v\n", err)
		return 1
	}
	return 0
}

// isTerminal reports whether w is a terminal (a character device), where a
// person reads the output as it scrolls.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
