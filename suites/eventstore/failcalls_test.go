package eventstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestFirstLineOfNewRules: each mutant of issue 37's ES-1.16 to ES-1.18
// fails its rule with a first line under 200 characters that names the
// failing call and the contract's identifier.
func TestFirstLineOfNewRules(t *testing.T) {
	cases := []struct {
		mutant, rule string
		names        []string
	}{
		{"request-id-fail-open", "ES-1.16", []string{"RequestIDExists(", "false, nil", "stored"}},
		{"load-fail-open", "ES-1.16", []string{"Load(", "no error"}},
		{"precheck-fail-open", "ES-1.16", []string{"Append(", "es.DuplicateRequestIDError"}},
		{"int16-version", "ES-1.17", []string{"Append(v32768)", "es.VersionConflictError", "32767"}},
		{"uint16-version", "ES-1.17", []string{"Append(v6553", "es.VersionConflictError", "65535"}},
		{"int16-event-position", "ES-1.18", []string{"Load(1, max)", "event 1 came back", "32768"}},
		{"event-cap-65535", "ES-1.18", []string{"Load(1, max)", "65535 events of 66000", "event 65536"}},
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
		target := eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil }, Caps: m.Build.Caps()}
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
		if n := len([]rune(goTestPrefix + line)); n >= 200 {
			t.Errorf("%s on %s: the first line is %d characters, want under 200: %s", c.rule, c.mutant, n, line)
		}
		for _, w := range append(c.names, "Expected", "to be empty") {
			want := !strings.Contains(w, "Expected") && w != "to be empty"
			if strings.Contains(line, w) != want {
				t.Errorf("%s on %s: the first line (%s) %s %q", c.rule, c.mutant, line, map[bool]string{true: "does not hold", false: "holds Gomega's"}[want], w)
			}
		}
	}
}
