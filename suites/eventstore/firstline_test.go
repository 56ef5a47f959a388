package eventstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// The first line a go test user reads of a failed rule (spec's report:
// "ID title: fail: reason", the reason up to its first numbered check) for
// the three store bugs examples/eventstore describes: short enough to read
// in a terminal, and naming the contract's identifier in package es that
// the store got wrong.
func TestFirstLineOfThreeStoreBugs(t *testing.T) {
	cases := []struct {
		mutant, rule, ident string
	}{
		{"request-id-per-type", "ES-1.6", "es.DuplicateRequestIDError"},          // request ids unique across aggregates
		{"silent-version-gap", "ES-1.11", "es.VersionConflictError"},             // a version check off by one
		{"create-as-version-conflict", "ES-1.3", "es.DuplicateAggregateIDError"}, // a creation conflict as a version conflict
	}
	byName := map[string]esmutants.Mutant{}
	for _, m := range esmutants.All() {
		byName[m.Name] = m
	}
	for _, c := range cases {
		m, ok := byName[c.mutant]
		if !ok {
			t.Fatalf("no mutant %s", c.mutant)
		}
		db := m.Build.NewDB()
		target := eventstore.Target{
			Open:    func(context.Context) (es.EventStore, error) { return db.Open(), nil },
			Caps:    m.Build.Caps(),
			Timeout: 20 * time.Second,
		}
		var got verdict.Result
		for _, r := range runner.Run("mutant-"+c.mutant, func() { eventstore.Register(target) }, runner.Options{Rules: []string{c.rule}}) {
			if r.Rule == c.rule {
				got = r
			}
		}
		line := firstLine(got)
		t.Logf("%s: %s", c.mutant, line)
		if got.Verdict != verdict.Fail {
			t.Errorf("%s on %s: %s, want fail", c.rule, c.mutant, got.Verdict)
			continue
		}
		// go test puts the author's file and line before it.
		if n := len([]rune(goTestPrefix + line)); n >= 200 {
			t.Errorf("%s on %s: the first line is %d characters, want under 200: %s", c.rule, c.mutant, n, line)
		}
		if !strings.Contains(line, c.ident) {
			t.Errorf("%s on %s: the first line does not name %s: %s", c.rule, c.mutant, c.ident, line)
		}
		for _, boiler := range []string{"Expected", "to be empty", "<string>"} {
			if strings.Contains(line, boiler) {
				t.Errorf("%s on %s: the first line holds Gomega's %q: %s", c.rule, c.mutant, boiler, line)
			}
		}
	}
}

// goTestPrefix is what go test prints before a subtest's error.
const goTestPrefix = "        store_test.go:25: "

// firstLine is the first line go test prints for a failed rule (spec's
// report: the numbered checks go on lines of their own).
func firstLine(r verdict.Result) string {
	reason, _, _ := strings.Cut(r.Reason, "; (")
	reason, _, _ = strings.Cut(reason, "\n")
	return r.Rule + " " + catalog.MustLookup(r.Rule).Title + ": " + string(r.Verdict) + ": " + reason
}

// TestFirstLineOfIDPairs: each ES-1.15 mutant fails with a first line
// naming a pair of its own shortcut's class (both ids and the class), and
// the same line again when the rule runs with the seed. (The line holds both
// ids with the rule's drawn suffix, so it is longer than 200 characters.)
func TestFirstLineOfIDPairs(t *testing.T) {
	cases := []struct{ mutant, class string }{
		{"request-id-hashcode", gen.PairJavaHash},
		{"request-id-like", gen.PairLike},
		{"request-id-glob", gen.PairGlob},
		{"url-decoded-ids", gen.PairURL},
		{"case-insensitive-ids", gen.PairCase},
		{"nfkc-ids", gen.PairNFKC},
		{"sha256-32-ids", gen.PairSHA256},
		{"single-byte-charset", gen.PairCharset},
	}
	byName := map[string]esmutants.Mutant{}
	for _, m := range esmutants.All() {
		byName[m.Name] = m
	}
	for _, c := range cases {
		m, ok := byName[c.mutant]
		if !ok {
			t.Fatalf("no mutant %s", c.mutant)
		}
		run := func() verdict.Result {
			db := m.Build.NewDB()
			target := eventstore.Target{
				Open:    func(context.Context) (es.EventStore, error) { return db.Open(), nil },
				Caps:    m.Build.Caps(),
				Timeout: 20 * time.Second,
				Seed:    1<<53 - 1, // as long as a drawn seed, so the line is as long as a run's
			}
			var got verdict.Result
			for _, r := range runner.Run("mutant-"+c.mutant, func() { eventstore.Register(target) }, runner.Options{Rules: []string{"ES-1.15"}}) {
				if r.Rule == "ES-1.15" {
					got = r
				}
			}
			return got
		}
		got := run()
		line := firstLine(got)
		t.Logf("%s: %s", c.mutant, line)
		if got.Verdict != verdict.Fail {
			t.Errorf("ES-1.15 on %s: %s, want fail", c.mutant, got.Verdict)
			continue
		}
		if !strings.Contains(line, " and ") || !strings.Contains(line, "("+c.class+")") {
			t.Errorf("ES-1.15 on %s: the first line does not name a pair of %q: %s", c.mutant, c.class, line)
		}
		if again := firstLine(run()); again != line {
			t.Errorf("ES-1.15 on %s: the seed did not replay the first line:\n%s\n%s", c.mutant, line, again)
		}
	}
}
