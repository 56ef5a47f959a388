package mutants_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/registry"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// runKind starts a registered consumer kind over embedded NATS and runs the
// suite against it.
func runKind(t *testing.T, key string) []verdict.Result {
	t.Helper()
	reg := registry.Targets()
	ref, err := target.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	kind, ref, err := reg.Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	started, err := kind.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Stop()
	return runner.Run(ref.Key(), started.Register, runner.Options{})
}

func summary(rs []verdict.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %-7s %-8s %6.0fms %s", r.Rule, r.Verdict, r.DurationMs, r.Reason)
	}
	return b.String()
}

func TestReferencePassesEveryRule(t *testing.T) {
	rs := runKind(t, "consumer/reference")
	t.Log(summary(rs))
	got := map[string]verdict.Verdict{}
	for _, r := range rs {
		got[r.Rule] = r.Verdict
	}
	for _, rule := range catalog.All("consumer") {
		if got[rule.ID] != verdict.Pass {
			t.Errorf("reference: %s is %q, want pass", rule.ID, got[rule.ID])
		}
	}
}

func TestEveryMutantFailsItsRules(t *testing.T) {
	if os.Getenv("ONCEPROOF_SKIP_MUTANTS") != "" {
		t.Skip("ONCEPROOF_SKIP_MUTANTS is set")
	}
	killed := map[string]bool{}
	for _, kind := range registry.Targets().Kinds("consumer", true) {
		if !kind.Mutant {
			continue
		}
		t.Run(kind.Name, func(t *testing.T) {
			rs := runKind(t, kind.Key())
			t.Log(summary(rs))
			failed := map[string]bool{}
			for _, r := range rs {
				if r.Verdict == verdict.Fail {
					failed[r.Rule] = true
					killed[r.Rule] = true
				}
			}
			for _, id := range kind.MustFail {
				if !failed[id] {
					t.Errorf("%s must fail %s", kind.Key(), id)
				}
			}
		})
	}
	for _, rule := range catalog.All("consumer") {
		if !killed[rule.ID] {
			t.Errorf("no mutant fails %s", rule.ID)
		}
	}
}
