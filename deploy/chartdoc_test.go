package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

const (
	chartValues = "../charts/queen-app/values.yaml"
	chartReadme = "../charts/queen-app/README.md"
	// updateChartReadme set to 1 rewrites the chart's README from values.yaml.
	updateChartReadme = "QUEEN_UPDATE_CHART_README"
)

const chartReadmeHead = `# queen-app chart

The webhook receiver (with the claims API) and the worker of queen-app, against an external
Redis. The repository's docs/install.md ("Kubernetes, with the chart") walks through a first installation;
` + "`helm test`" + ` runs ` + "`queenctl doctor`" + ` against the release.

## Values

Generated from the comments of values.yaml (` + "`" + updateChartReadme + "=1 go test ./deploy -run TestChartReadmeIsValuesYaml`" + `);
` + "`go test ./deploy`" + ` fails when the two differ.

| Key | Default | Description |
|---|---|---|
`

// valueRow is one leaf of values.yaml: a scalar, a list or an empty map.
type valueRow struct{ key, def, doc string }

// comment joins a node's comment lines into one sentence.
func comment(cs ...string) string {
	var words []string
	for _, c := range cs {
		for _, l := range strings.Split(c, "\n") {
			l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
			if l != "" {
				words = append(words, l)
			}
		}
	}
	return strings.Join(strings.Fields(strings.Join(words, " ")), " ")
}

func valueRows(t *testing.T, prefix string, m *yaml.Node, inherited string) []valueRow {
	t.Helper()
	var rows []valueRow
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		doc := comment(k.HeadComment, k.LineComment, v.LineComment)
		if doc == "" && i == 0 {
			doc = inherited // a group's comment speaks of its first key
		}
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			rows = append(rows, valueRows(t, key+".", v, doc)...)
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		def, err := json.Marshal(x)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		rows = append(rows, valueRow{key, string(def), doc})
	}
	return rows
}

func chartReadmeFromValues(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.WriteString(chartReadmeHead)
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range valueRows(t, "", doc.Content[0], "") {
		fmt.Fprintf(&out, "| `%s` | `%s` | %s |\n", r.key, cell(r.def), cell(r.doc))
	}
	return out.Bytes()
}

// The chart's README lists every value of values.yaml with its default and
// its comment; a value added, removed or changed without it fails here.
func TestChartReadmeIsValuesYaml(t *testing.T) {
	want := chartReadmeFromValues(t)
	if os.Getenv(updateChartReadme) == "1" {
		if err := os.WriteFile(chartReadme, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(chartReadme)
	if err != nil {
		t.Fatalf("%v (%s=1 writes it)", err, updateChartReadme)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from values.yaml: run %s=1 go test ./deploy -run TestChartReadmeIsValuesYaml", chartReadme, updateChartReadme)
	}
	for _, key := range []string{"`caBundle.configMap.name`", "`redis.existingSecret`", "`tests.enabled`", "`flags.freeClosedPR`"} {
		if !bytes.Contains(want, []byte(key)) {
			t.Errorf("the values table has no %s", key)
		}
	}
}
