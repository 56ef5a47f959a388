package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/adapters/registry"
	"github.com/onceproof/tck/catalog"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/runner"
	"github.com/onceproof/tck/target"
	"github.com/onceproof/tck/verdict"
)

// runSuite starts the registered eventstore/sqlite target and runs the whole
// eventstore suite against it, as `tck run` does.
func runSuite(tb testing.TB, addr string) []verdict.Result {
	tb.Helper()
	reg := registry.Targets()
	kind, ref, err := reg.Resolve(target.Ref{Suite: "eventstore", Name: "sqlite", Address: addr})
	if err != nil {
		tb.Fatal(err)
	}
	if !kind.Default {
		tb.Errorf("eventstore/sqlite must be the default event-store target")
	}
	started, err := kind.Start(context.Background(), ref)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := started.Stop(); err != nil {
			tb.Errorf("stop: %v", err)
		}
	}()
	return runner.Run(ref.Key(), started.Register, runner.Options{})
}

// requireMust fails the test for every MUST rule of the suite that did not
// pass, and for every rule of the catalog missing from the results.
func requireMust(t *testing.T, results []verdict.Result) {
	t.Helper()
	got := map[string]verdict.Result{}
	for _, r := range results {
		got[r.Rule] = r
	}
	for _, rule := range catalog.All("eventstore") {
		r, ok := got[rule.ID]
		switch {
		case !ok:
			t.Errorf("%s: no result", rule.ID)
		case rule.Level == catalog.Must && r.Verdict != verdict.Pass:
			t.Errorf("%s (MUST): %s: %s", rule.ID, r.Verdict, r.Reason)
		default:
			t.Logf("%s %s: %s %s", rule.ID, rule.Level, r.Verdict, r.Reason)
		}
	}
}

func TestSuiteEmbedded(t *testing.T) {
	requireMust(t, runSuite(t, ""))
}

func TestSuiteOnAFileURL(t *testing.T) {
	if testing.Short() {
		t.Skip("the embedded run covers the adapter; -short skips the second full run")
	}
	requireMust(t, runSuite(t, "sqlite://"+filepath.Join(t.TempDir(), "kept.db")))
}

// The handle and the database fail differently once closed, and neither is
// a conflict (ES-1.10 checks the handle; this checks the database too).
func TestClosedDatabaseIsNotAConflict(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	s := db.Store()
	agg := es.AggregateID{Context: "c", Name: "n", ID: "1", Tenant: "t"}
	st := es.Stream{Aggregate: agg, Version: 1, RequestID: "r", CommandID: "c", Events: []es.Event{{Name: "E", Body: []byte("x")}}}
	if err := s.Append(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st.Version = 2
	st.RequestID = "r2"
	err = s.Append(ctx, st)
	if err == nil || errors.Is(err, es.ErrConflict) {
		t.Fatalf("append on a closed database: want a non-conflict error, got %v", err)
	}
	if _, err := s.RequestIDExists(ctx, agg, "r"); err == nil {
		t.Fatalf("query on a closed database: want an error")
	}
}

// BenchmarkSuite measures the wall time of the whole eventstore suite on
// sqlite: go test -run '^$' -bench Suite -benchtime 3x ./adapters/eventstore/sqlite/
func BenchmarkSuite(b *testing.B) {
	for b.Loop() {
		for _, r := range runSuite(b, "") {
			if r.Level == string(catalog.Must) && r.Verdict != verdict.Pass {
				b.Fatalf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
			}
		}
	}
}
