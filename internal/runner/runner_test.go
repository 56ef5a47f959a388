package runner_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// TestVerdictMapping pins how each way a rule body can end becomes a verdict,
// and that a run goes on after a panic or a hang: the same when the rules run
// one by one in their specs and when an Ahead set runs them ahead.
func TestVerdictMapping(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-spec", true: "ahead"}[parallel], func(t *testing.T) {
			verdictMapping(t, parallel)
		})
	}
}

func verdictMapping(t *testing.T, parallel bool) {
	set := func() *spec.Set {
		s := spec.New("eventstore") // no capabilities: ES-3.1 (needs precheck) is not applicable
		s.Concurrent = parallel
		s.Timeout = 500 * time.Millisecond
		s.It("ES-1.1", func(r *spec.R) { r.Ev.Notef("held") })
		s.It("ES-1.2", func(r *spec.R) { r.Expect(1).To(Equal(2), "one is not two") })
		s.It("ES-1.3", func(r *spec.R) { panic("boom") })
		s.It("ES-1.4", func(r *spec.R) { <-r.Context().Done(); select {} })
		s.It("ES-1.5", func(r *spec.R) { r.Unknown("could not tell") })
		s.It("ES-1.6", func(r *spec.R) { r.Skipped("window longer than budget") })
		s.It("ES-3.1", func(r *spec.R) { t.Error("ran without its capability") })
		s.It("ES-1.7", func(r *spec.R) { r.Ev.Figure("x", 1, "") })
		s.It("ES-1.8", func(r *spec.R) {
			r.Consistently(func() int { return 1 }).WithTimeout(50*time.Millisecond).Should(Equal(2), "never two")
		})
		s.It("ES-1.9", func(r *spec.R) {
			r.Excuse(func(failure string) string { return "the kit was paused: " + failure })
			r.Eventually(func() int { return 1 }).WithTimeout(50*time.Millisecond).Should(Equal(2), "never two")
		})
		return s
	}
	register := func() { set().Ginkgo() }
	got := map[string]verdict.Result{}
	for _, r := range runner.Run("t", register, runner.Options{}) {
		got[r.Rule] = r
	}
	want := map[string]struct {
		v      verdict.Verdict
		reason string
	}{
		"ES-1.1": {verdict.Pass, "held"},
		"ES-1.2": {verdict.Fail, "one is not two"},
		"ES-1.3": {verdict.Fail, "boom"},
		"ES-1.4": {verdict.Unknown, "deadline"},
		"ES-1.5": {verdict.Unknown, "could not tell"},
		"ES-1.6": {verdict.Skipped, "window longer than budget"},
		"ES-3.1": {verdict.NotApplicable, string(catalog.CapPreCheck)},
		"ES-1.7": {verdict.Pass, ""},
		"ES-1.8": {verdict.Fail, "never two"},
		"ES-1.9": {verdict.Unknown, "the kit was paused: never two"},
	}
	for id, w := range want {
		r := got[id]
		if r.Verdict != w.v || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: %s %q, want %s containing %q", id, r.Verdict, r.Reason, w.v, w.reason)
		}
		if r.Level != "MUST" || r.Target != "t" {
			t.Errorf("%s: level %q target %q", id, r.Level, r.Target)
		}
	}
	// The missing capability is data too: the report's gaps are read from it.
	if m := got["ES-3.1"].Missing; len(m) != 1 || m[0] != string(catalog.CapPreCheck) {
		t.Errorf("ES-3.1 missing %q, want [%s]", m, catalog.CapPreCheck)
	}
	if m := got["ES-1.1"].Missing; m != nil {
		t.Errorf("ES-1.1 (applies) missing %q", m)
	}
	if fs := got["ES-1.7"].Evidence.Figures; len(fs) == 0 || fs[0].Name != "x" {
		t.Errorf("ES-1.7 evidence lost its figure: %+v", got["ES-1.7"].Evidence)
	}
	// Filtering: the others are skipped and say why.
	got = map[string]verdict.Result{}
	for _, r := range runner.Run("t", register, runner.Options{Rules: []string{"ES-1.1"}}) {
		got[r.Rule] = r
	}
	if got["ES-1.1"].Verdict != verdict.Pass || got["ES-1.2"].Verdict != verdict.Skipped || !strings.Contains(got["ES-1.2"].Reason, "filtered") {
		t.Errorf("filtered run: %+v / %+v", got["ES-1.1"], got["ES-1.2"])
	}
}

// TestAheadOverlapsAndAloneIsAlone: under Ginkgo an Ahead set's rules run
// at the same time (two bodies that each wait for the other both pass; one
// after the other they would wait out their deadline) and an ItAlone rule
// runs with no other body running.
func TestAheadOverlapsAndAloneIsAlone(t *testing.T) {
	var running atomic.Int32
	started := map[string]chan struct{}{"ES-1.1": make(chan struct{}), "ES-1.2": make(chan struct{})}
	meet := func(me, other string) spec.Body {
		return func(r *spec.R) {
			running.Add(1)
			defer running.Add(-1)
			close(started[me])
			select {
			case <-started[other]:
			case <-r.Context().Done():
				r.Expect(false).To(BeTrue(), me+" ran without "+other)
			}
		}
	}
	register := func() {
		s := spec.New("eventstore")
		s.Concurrent = true
		s.Timeout = 5 * time.Second
		s.It("ES-1.1", meet("ES-1.1", "ES-1.2"))
		s.ItAlone("ES-1.3", func(r *spec.R) {
			r.Expect(running.Load()).To(BeZero(), "other bodies running beside an alone rule")
		})
		s.ItRace("ES-1.4", func(r *spec.R) {}) // its share: spec's TestRunOverlapsAloneAndRace
		s.It("ES-1.2", meet("ES-1.2", "ES-1.1"))
		s.Ginkgo()
	}
	results := runner.Run("t", register, runner.Options{Rules: []string{"ES-1.1", "ES-1.2", "ES-1.3", "ES-1.4"}})
	if len(results) < 4 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		if r.Verdict != verdict.Pass {
			t.Errorf("%s: %s %s", r.Rule, r.Verdict, r.Reason)
		}
	}
}
