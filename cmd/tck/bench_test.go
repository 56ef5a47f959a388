package main

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkRunEventstoreEmbedded times `tck run --suite eventstore` on the
// embedded targets (memory and sqlite), end to end, report included. The
// issue's budget is 15 s on a 2-core machine:
//
//	go test -run '^$' -bench RunEventstoreEmbedded -benchtime 3x ./cmd/tck/
func BenchmarkRunEventstoreEmbedded(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Now()
		code := run(context.Background(), []string{"run", "--suite", "eventstore",
			"--target", "eventstore/memory", "--target", "eventstore/sqlite", "--quiet", "--out", b.TempDir()}, io.Discard, io.Discard)
		if code != 0 {
			b.Fatalf("exit %d", code)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/run")
	}
}
