package deploy

import (
	"errors"
	"io"
	"log"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"os"
)

// lintStrict is `helm lint --strict chartDir` with vals as --values: its
// errors joined, nil when it passes.
func lintStrict(t *testing.T, vals map[string]any) error {
	t.Helper()
	// Helm's engine logs lint's INFO lines with the log package.
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	var errs []error
	// As action.Lint does (not imported: it would pull the Kubernetes client
	// in): --strict fails on warnings too.
	for _, m := range lint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, namespace, nil, false).Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m.Err)
		}
	}
	return errors.Join(errs...)
}

// helm lint --strict fails without the required values, as helm template
// does (Helm's own required and fail only log at INFO in lint), and passes
// with each values file .ci/run lints with.
func TestLintStrictFailsOnEachMissingRequiredValue(t *testing.T) {
	err := lintStrict(t, nil)
	if err == nil || !strings.Contains(err.Error(), "is required") {
		t.Fatalf("helm lint --strict without values: %v; want it to fail naming a required value", err)
	}
	for want, vals := range refusedValues() {
		if err := lintStrict(t, vals); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("helm lint --strict: want an error naming %q, got %v", want, err)
		}
	}
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("the chart's ci/*-values.yaml: %v %v", files, err)
	}
	for _, f := range append(files, "") {
		vals := inlineValues()
		if f != "" {
			if vals, err = chartutil.ReadValuesFile(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := lintStrict(t, vals); err != nil {
			t.Errorf("helm lint --strict --values %s: %v", f, err)
		}
	}
}
