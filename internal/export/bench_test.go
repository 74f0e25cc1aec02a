package export

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
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

// BenchmarkCacheBound publishes b.N branches, each adding an 8 KiB source
// file that does not compress, through two publishers with their own
// remote and clone cache: one collecting its cache at the default bound,
// one never (the cache as it grew before). It reports both caches' size
// and files at the end and their ratio; run it with -benchtime=Nx, N past
// DefaultGCPacks, to see the bound.
func BenchmarkCacheBound(b *testing.B) {
	bounded, unbounded := newEnv(b), newEnv(b)
	unbounded.pub.Git.GCLoose, unbounded.pub.Git.GCPacks = math.MaxInt, math.MaxInt
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		issue := int64(1000 + i)
		data := make([]byte, 6<<10)
		_, _ = rand.Read(data)
		files := map[string]string{fmt.Sprintf("src/p%d.rs", i): "// " + base64.StdEncoding.EncodeToString(data) + "\n"}
		for _, e := range []*env{bounded, unbounded} {
			head := e.branch(b, issue, files)
			if out, err := e.pub.Push(ctx, e.job(issue, head)); err != nil || out.State != StatePROpened {
				b.Fatalf("#%d: %+v %v", issue, out, err)
			}
		}
	}
	b.StopTimer()
	size, files := dirSize(b, bounded.cache)
	nogcSize, nogcFiles := dirSize(b, unbounded.cache)
	b.ReportMetric(float64(size)/1024, "cache-KiB")
	b.ReportMetric(float64(files), "cache-files")
	b.ReportMetric(float64(nogcSize)/1024, "nogc-cache-KiB")
	b.ReportMetric(float64(nogcFiles), "nogc-cache-files")
	b.ReportMetric(float64(size)/float64(nogcSize), "cache/nogc")
}

// dirSize is the bytes and the number of files under dir.
func dirSize(b *testing.B, dir string) (size int64, files int) {
	b.Helper()
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		files++
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return size, files
}
