package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/verdict"
)

func TestClassify(t *testing.T) {
	P, F, U, N, S, A := verdict.Pass, verdict.Fail, verdict.Unknown, verdict.NotApplicable, verdict.Skipped, Absent
	cases := []struct {
		old, new verdict.Verdict
		want     ChangeKind
	}{
		{P, F, Regression}, {P, U, Regression}, {U, F, Regression}, {N, F, Regression}, {S, U, Regression}, {A, F, Regression},
		{P, S, CoverageLost}, {P, N, CoverageLost}, {P, A, CoverageLost},
		{F, P, Improvement}, {U, P, Improvement}, {A, P, Improvement}, {S, P, Improvement},
		{F, U, Changed}, {S, N, Changed}, {F, A, Changed}, {A, S, Changed},
	}
	for _, c := range cases {
		if got := classify(c.old, c.new); got != c.want {
			t.Errorf("%q -> %q: %s, want %s", c.old, c.new, got, c.want)
		}
	}
}

func bundleOf(results ...verdict.Result) *Report {
	r := &Report{Run: Run{Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, Targets: []Target{}, Results: results}
	for _, res := range results {
		found := false
		for _, t := range r.Targets {
			found = found || t.Name == res.Target
		}
		if !found {
			r.Targets = append(r.Targets, Target{Status: "ran"})
			r.Targets[len(r.Targets)-1].Name = res.Target
		}
	}
	r.Finish()
	return r
}

func rr(target, rule, level string, v verdict.Verdict) verdict.Result {
	return verdict.Result{Target: target, Rule: rule, Level: level, Verdict: v, Title: "t " + rule, Reason: "why " + rule, Evidence: &verdict.Evidence{}}
}

// TestCompare: regressions first, MUST before SHOULD; only a MUST
// regression sets exit 1.
func TestCompare(t *testing.T) {
	const nats = "broker/nats"
	old := bundleOf(
		rr(nats, "BR-1.1", "MUST", verdict.Pass),
		rr(nats, "BR-1.4", "SHOULD", verdict.Pass),
		rr(nats, "BR-1.3", "MUST", verdict.Fail),
		rr(nats, "BR-2.1", "MUST", verdict.Pass),
		rr(nats, "BR-2.2", "MUST", verdict.Pass),
	)
	cases := []struct {
		name      string
		new       *Report
		wantOrder []string // kind:rule
		wantExit  int
	}{
		{"nothing changed", bundleOf(
			rr(nats, "BR-1.1", "MUST", verdict.Pass), rr(nats, "BR-1.4", "SHOULD", verdict.Pass), rr(nats, "BR-1.3", "MUST", verdict.Fail),
			rr(nats, "BR-2.1", "MUST", verdict.Pass), rr(nats, "BR-2.2", "MUST", verdict.Pass)), nil, 0},
		{"a MUST regressed", bundleOf(
			rr(nats, "BR-1.1", "MUST", verdict.Pass), rr(nats, "BR-1.4", "SHOULD", verdict.Unknown), rr(nats, "BR-1.3", "MUST", verdict.Pass),
			rr(nats, "BR-2.1", "MUST", verdict.Fail), rr(nats, "BR-2.2", "MUST", verdict.Skipped)),
			[]string{"regression:BR-2.1", "regression:BR-1.4", "coverage-lost:BR-2.2", "improvement:BR-1.3"}, 1},
		{"only a SHOULD regressed", bundleOf(
			rr(nats, "BR-1.1", "MUST", verdict.Pass), rr(nats, "BR-1.4", "SHOULD", verdict.Fail), rr(nats, "BR-1.3", "MUST", verdict.Fail),
			rr(nats, "BR-2.1", "MUST", verdict.Pass)),
			[]string{"regression:BR-1.4", "coverage-lost:BR-2.2"}, 0},
		{"a new failing rule", bundleOf(
			rr(nats, "BR-1.1", "MUST", verdict.Pass), rr(nats, "BR-1.4", "SHOULD", verdict.Pass), rr(nats, "BR-1.3", "MUST", verdict.Fail),
			rr(nats, "BR-2.1", "MUST", verdict.Pass), rr(nats, "BR-2.2", "MUST", verdict.Pass), rr(nats, "BR-2.3", "MUST", verdict.Fail)),
			[]string{"regression:BR-2.3"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Compare(old, c.new, "old", "new")
			var got []string
			for _, ch := range d.Changes {
				got = append(got, string(ch.Kind)+":"+ch.Rule)
			}
			if strings.Join(got, " ") != strings.Join(c.wantOrder, " ") {
				t.Errorf("changes %v, want %v", got, c.wantOrder)
			}
			if d.ExitCode() != c.wantExit {
				t.Errorf("exit %d, want %d", d.ExitCode(), c.wantExit)
			}
			var b strings.Builder
			d.WriteText(&b)
			if c.wantExit == 1 && !strings.Contains(b.String(), "a MUST rule regressed: ") {
				t.Errorf("the text does not name the MUST regression:\n%s", b.String())
			}
		})
	}
}

// TestReadBundle takes a folder or its results.json, and refuses anything else.
func TestReadBundle(t *testing.T) {
	dir := t.TempDir()
	if err := WriteAll(dir, bundleOf(rr("broker/nats", "BR-1.1", "MUST", verdict.Pass))); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, FileJSON)} {
		if _, err := ReadBundle(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema":"x"}`), 0o644)
	for _, p := range []string{t.TempDir(), filepath.Join(dir, "nope.json"), bad} {
		if _, err := ReadBundle(p); err == nil {
			t.Errorf("%s: read without an error", p)
		}
	}
}
