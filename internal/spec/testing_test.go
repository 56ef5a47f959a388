package spec

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

// TestDriverVerdicts pins how each ending of a body maps to a verdict under
// the go test driver, the same table as the Ginkgo driver's (runner tests).
func TestDriverVerdicts(t *testing.T) {
	s := New("eventstore")
	s.Timeout = 300 * time.Millisecond
	cleaned := 0
	s.It("ES-1.1", func(r *R) { r.DeferCleanup(func() { cleaned++ }); r.Ev.Notef("held") })
	s.It("ES-1.2", func(r *R) { r.DeferCleanup(func() { cleaned++ }); r.Expect(1).To(Equal(2), "one is not two") })
	s.It("ES-1.3", func(r *R) { panic("boom") })
	s.It("ES-1.4", func(r *R) { <-r.Context().Done(); select {} })
	s.It("ES-1.5", func(r *R) { r.Unknown("could not tell") })
	s.It("ES-1.6", func(r *R) { r.Skipped("window longer than budget") })
	s.It("ES-3.1", func(r *R) { t.Error("ran without its capability") })
	s.It("ES-1.8", func(r *R) {
		r.Eventually(func() int { return 1 }).WithTimeout(50*time.Millisecond).Should(Equal(2), "never two")
	})
	s.It("ES-1.9", func(r *R) {
		r.Excuse(func(string) string { return "" })
		r.Excuse(func(failure string) string { return "the kit was paused: " + failure })
		r.Expect(1).To(Equal(2), "one is not two")
	})
	s.It("ES-1.10", func(r *R) {
		r.Excuse(func(string) string { return "" })
		r.Expect(1).To(Equal(2), "one is not two")
	})
	s.It("ES-1.11", func(r *R) {
		r.Check(func() { r.Expect(1).To(Equal(2), "one is not two") })
		r.Check(func() { r.Unknown("then no answer") })
	})
	runWant(t, s, map[string]want{
		"ES-1.11": {verdict.Fail, "one is not two"},
		"ES-1.1":  {verdict.Pass, "held"},
		"ES-1.2":  {verdict.Fail, "one is not two"},
		"ES-1.3":  {verdict.Fail, "boom"},
		"ES-1.4":  {verdict.Unknown, "did not finish"},
		"ES-1.5":  {verdict.Unknown, "could not tell"},
		"ES-1.6":  {verdict.Skipped, "window longer than budget"},
		"ES-3.1":  {verdict.NotApplicable, string(catalog.CapPreCheck)},
		"ES-1.8":  {verdict.Fail, "never two"},
		"ES-1.9":  {verdict.Unknown, "the kit was paused: one is not two"},
		"ES-1.10": {verdict.Fail, "one is not two"},
	})
	if cleaned != 2 {
		t.Errorf("cleanups ran %d times, want 2 (after a pass and after a fail)", cleaned)
	}
}

// want is a verdict and a piece of its reason.
type want struct {
	v      verdict.Verdict
	reason string
}

// runWant runs every rule of s under the go test driver and checks each
// against its want.
func runWant(t *testing.T, s *Set, wants map[string]want) {
	t.Helper()
	for _, ru := range s.rules {
		out := s.runOne(ru)
		w := wants[ru.id]
		if out.v != w.v || !strings.Contains(out.reason, w.reason) {
			t.Errorf("%s: %s %q, want %s containing %q", ru.id, out.v, out.reason, w.v, w.reason)
		}
	}
}

// A rule's SetUp allowance lengthens its deadline, and only its own: the
// same slow body is unknown without it.
func TestSetUpAllowance(t *testing.T) {
	s := New("eventstore")
	s.Timeout = 100 * time.Millisecond
	s.SetUp = map[string]time.Duration{"ES-1.1": 400 * time.Millisecond}
	slow := func(r *R) {
		select {
		case <-time.After(250 * time.Millisecond):
			r.Ev.Notef("set up")
		case <-r.Context().Done():
			r.Unknown("the deadline came first")
		}
	}
	s.It("ES-1.1", slow)
	s.It("ES-1.2", slow)
	runWant(t, s, map[string]want{
		"ES-1.1": {verdict.Pass, "set up"},
		"ES-1.2": {verdict.Unknown, "the deadline came first"},
	})
}
