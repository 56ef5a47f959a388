package postgres_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/adapters/registry"
	"github.com/onceproof/tck/catalog"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/runner"
	"github.com/onceproof/tck/target"
	"github.com/onceproof/tck/verdict"
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

func TestSuiteOnServer(t *testing.T) {
	url := serverURL(t)
	kind, ref, err := registry.Targets().Resolve(target.Ref{Suite: "eventstore", Name: "postgres", Address: url})
	if err != nil {
		t.Fatal(err)
	}
	started, err := kind.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Stop()
	if p := target.Password(url); p != "" && strings.Contains(started.Info.Address, p) {
		t.Errorf("the target info shows the password: %s", started.Info.Address)
	}
	results := runner.Run(ref.Key(), started.Register, runner.Options{})
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

// An unreachable server fails fast, as target.ErrUnavailable, and no error
// text carries the password.
func TestUnreachableServer(t *testing.T) {
	const secret = "s3cr3t-pw"
	// Port 1 on loopback: nothing listens there, the connection is refused.
	url := "postgres://tck:" + secret + "@127.0.0.1:1/tck?sslmode=disable&connect_timeout=2"
	kind, ref, err := registry.Targets().Resolve(target.Ref{Suite: "eventstore", Name: "postgres", Address: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kind.Start(ctx, ref)
	if !errors.Is(err, target.ErrUnavailable) {
		t.Fatalf("want target.ErrUnavailable, got %v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the password: %v", err)
	}
	_, err = postgres.Open(ctx, url)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("postgres.Open: want an error without the password, got %v", err)
	}
}

// A wrong password is refused by the server; the error names neither the
// wrong password nor is it a conflict.
func TestWrongPassword(t *testing.T) {
	url := serverURL(t)
	pw := target.Password(url)
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
