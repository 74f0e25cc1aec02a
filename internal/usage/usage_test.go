package usage

import (
	"strings"
	"testing"

	"github.com/queen-app/queen-app/internal/config"
)

func TestArgs(t *testing.T) {
	b := Binary{Name: "worker", Usage: "[--help]", About: "runs tasks", Roles: []config.Role{config.Worker}, Example: "worker"}
	cases := []struct {
		args         []string
		code         int
		exit         bool
		stdout, errs string
	}{
		{args: nil, code: 0, exit: false},
		{args: []string{"--help"}, code: 0, exit: true, stdout: "usage: worker [--help]\n\nruns tasks\n"},
		{args: []string{"-h"}, code: 0, exit: true, stdout: "QUEEN_REDIS_URL"},
		{args: []string{"--version"}, code: 0, exit: true, stdout: "worker "},
		{args: []string{"--verbose"}, code: 2, exit: true, errs: `worker: unexpected argument "--verbose"`},
		{args: []string{"--help", "x"}, code: 2, exit: true, errs: `worker: unexpected argument "--help"`},
	}
	for _, c := range cases {
		var out, errOut strings.Builder
		code, exit := b.Args(c.args, &out, &errOut)
		if code != c.code || exit != c.exit || !strings.HasPrefix(out.String(), c.stdout) && !strings.Contains(out.String(), c.stdout) ||
			!strings.HasPrefix(errOut.String(), c.errs) || (c.errs == "") != (errOut.Len() == 0) {
			t.Errorf("%v: %d %v, stdout %q, stderr %q", c.args, code, exit, out.String(), errOut.String())
		}
	}
}
