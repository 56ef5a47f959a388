package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// runSuite runs the whole eventstore suite against a database at path (a
// temporary one when empty), configured as the registered eventstore/sqlite
// target is. (The registry is not imported: it links every suite of the kit,
// and this test must not depend on them.)
func runSuite(tb testing.TB, path string) []verdict.Result {
	tb.Helper()
	ctx := context.Background()
	var (
		db   *sqlite.DB
		stop func() error
		err  error
	)
	if path == "" {
		db, stop, err = sqlite.OpenTemp(ctx)
	} else {
		db, stop, err = sqlite.OpenFile(ctx, path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			tb.Errorf("stop: %v", err)
		}
	}()
	t := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Store(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New},
	}
	return runner.Run("eventstore/sqlite", func() { eventstore.Register(t) }, runner.Options{})
}

func TestSuiteEmbedded(t *testing.T) {
	selftest.RequireMustPass(t, "eventstore", runSuite(t, ""))
}

func TestSuiteOnAFileURL(t *testing.T) {
	if testing.Short() {
		t.Skip("the embedded run covers the adapter; -short skips the second full run")
	}
	selftest.RequireMustPass(t, "eventstore", runSuite(t, "sqlite://"+filepath.Join(t.TempDir(), "kept.db")))
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

// A writer locked out by another process's write transaction gets the
// driver's error (busy, or the cancelled context), never a conflict, and
// nothing is stored.
func TestLockedDatabaseIsNotAConflict(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Another "process": its own connection, holding the write lock.
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s := db.Store()
	agg := es.AggregateID{Context: "c", Name: "n", ID: "locked", Tenant: "t"}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = s.Append(short, es.Stream{Aggregate: agg, Version: 1, RequestID: "r", CommandID: "c", Events: []es.Event{{Name: "E", Body: []byte("x")}}})
	if err == nil || errors.Is(err, es.ErrConflict) {
		t.Fatalf("append while another writer holds the lock: want a non-conflict error, got %v", err)
	}
	t.Logf("locked out: %v", err)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, agg, 1, eskit.MaxVersion); err != nil || len(got) != 0 {
		t.Fatalf("after the refused append: %d streams, %v", len(got), err)
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
