package postgres_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// serverURL is the server under test, TCK_POSTGRES_URL (scripts/postgres-local.sh
// prints it). Without it the test cannot run: it says so with t.Skip, or
// fails when TCK_REQUIRE_POSTGRES=1 (CI), so a missing server never passes
// silently.
func serverURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("TCK_POSTGRES_URL")
	if url == "" {
		const why = "TCK_POSTGRES_URL is not set: no PostgreSQL server to test against (eval \"$(scripts/postgres-local.sh)\" starts one)"
		if os.Getenv("TCK_REQUIRE_POSTGRES") == "1" {
			tb.Fatal(why + "; TCK_REQUIRE_POSTGRES=1 requires it")
		}
		tb.Skip(why)
	}
	return url
}

// runSuite runs the whole eventstore suite against the server, configured as
// the registered eventstore/postgres target is. (The registry is not
// imported: it links every suite of the kit, and this test must not depend
// on them.)
func runSuite(tb testing.TB, url string) []verdict.Result {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	t := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Store(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New},
		// A server shared with other test binaries on a loaded runner
		// reaches its contended trials slowly: the cap bounds the wait,
		// it never turns a violation into a pass.
		Race: eventstore.RaceConfig{Cap: time.Minute},
	}
	return runner.Run("eventstore/postgres", func() { eventstore.Register(t) }, runner.Options{})
}

func TestSuiteOnServer(t *testing.T) {
	selftest.RequireMustPass(t, "eventstore", runSuite(t, serverURL(t)))
}

// An unreachable server fails Open, and no error text carries the password.
func TestUnreachableServer(t *testing.T) {
	const secret = "s3cr3t-pw"
	// Port 1 on loopback: nothing listens there, the connection is refused.
	url := "postgres://tck:" + secret + "@127.0.0.1:1/tck?sslmode=disable"
	_, err := postgres.Open(context.Background(), url)
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the password: %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error should fit on one line: %q", err)
	}
	t.Logf("unreachable: %v", err)
	// The registry wraps it so; the password must not come back either.
	if u := target.Unavailable(target.Ref{Suite: "eventstore", Name: "postgres", Address: url}, err); !errors.Is(u, target.ErrUnavailable) || strings.Contains(u.Error(), secret) {
		t.Fatalf("target.Unavailable: %v", u)
	}
}

// A server that accepts the connection and never answers must not hang
// Open: the connect timeout ends it.
func TestSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	url := "postgres://tck:pw@" + ln.Addr().String() + "/tck?sslmode=disable&connect_timeout=1"
	if _, err := postgres.Open(context.Background(), url); err == nil {
		t.Fatal("Open of a silent server succeeded")
	}
}

// A wrong password is refused by the server; the error does not show it.
func TestWrongPassword(t *testing.T) {
	url := serverURL(t)
	pw := redact.Secrets(url)[0]
	if pw == "" {
		t.Skip("TCK_POSTGRES_URL has no password to get wrong")
	}
	bad := strings.Replace(url, ":"+pw+"@", ":wrong-"+pw+"@", 1)
	_, err := postgres.Open(context.Background(), bad)
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "wrong-"+pw) {
		t.Fatalf("the error shows the password: %v", err)
	}
}

// Closing the pool under a handle gives a non-conflict error.
func TestClosedPoolIsNotAConflict(t *testing.T) {
	url := serverURL(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	s := db.Store()
	db.Close()
	agg := es.AggregateID{Context: "c", Name: "n", ID: "closed-" + time.Now().Format(time.RFC3339Nano), Tenant: "t"}
	err = s.Append(ctx, es.Stream{Aggregate: agg, Version: 1, RequestID: "r", CommandID: "c", Events: []es.Event{{Name: "E", Body: []byte("x")}}})
	if err == nil || errors.Is(err, es.ErrConflict) {
		t.Fatalf("append on a closed pool: want a non-conflict error, got %v", err)
	}
}

// BenchmarkSuite measures the wall time of the whole eventstore suite on the
// server at TCK_POSTGRES_URL:
// go test -run '^$' -bench Suite -benchtime 3x ./adapters/eventstore/postgres/
func BenchmarkSuite(b *testing.B) {
	url := serverURL(b)
	for b.Loop() {
		for _, r := range runSuite(b, url) {
			if r.Level == string(catalog.Must) && r.Verdict != verdict.Pass {
				b.Fatalf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
			}
		}
	}
}
