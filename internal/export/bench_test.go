package export

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPublish publishes one new branch per iteration against the local
// remote (bundle download, import, checks, push, PR on the in-memory
// GitHub) and, in the same run, pushes a similar branch with a bare
// `git push`, reporting both rates and their ratio. ns/op is one publish.
func BenchmarkPublish(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	var publish, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		issue := int64(1000 + i)
		head := e.branch(b, issue, map[string]string{fmt.Sprintf("src/p%d.rs", i): "fn main() {}\n"})
		b.StartTimer()
		start := time.Now()
		out, err := e.pub.Push(ctx, e.job(issue, head))
		publish += time.Since(start)
		b.StopTimer()
		if err != nil || out.State != StatePROpened {
			b.Fatalf("#%d: %+v %v", issue, out, err)
		}
		name := fmt.Sprintf("bare-%d", i)
		e.work.Branch(b, name, "origin/master")
		e.work.Commit(b, name, map[string]string{fmt.Sprintf("src/b%d.rs", i): "fn main() {}\n"}, "bare")
		start = time.Now()
		e.work.Push(b, name)
		bare += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/publish.Minutes(), "branches/min")
	b.ReportMetric(float64(b.N)/bare.Minutes(), "bare-pushes/min")
	b.ReportMetric(publish.Seconds()/bare.Seconds(), "publish/bare")
}
