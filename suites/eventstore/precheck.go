package eventstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/spec"
)

// scriptedFast is a fast checker whose answers the rule chooses, so that a
// false positive can be forced instead of hoped for.
type scriptedFast struct {
	mu    sync.Mutex
	maybe map[string]bool
}

func (s *scriptedFast) MaybeDuplicate(_ es.AggregateID, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maybe[id]
}
func (s *scriptedFast) Remember(_ es.AggregateID, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maybe[id] = true
}

type failingAuthority struct{}

func (failingAuthority) RequestIDExists(context.Context, es.AggregateID, string) (bool, error) {
	return false, errors.New("authoritative store unreachable")
}

func registerPreCheck(s *spec.Set, t target) {
	s.It("ES-3.1", func(r *spec.R) {
		f := open(r, t)
		agg := f.aggregate("a")
		f.mustAppend(stream(agg, 1, "req-stored"))
		fast := &scriptedFast{maybe: map[string]bool{"req-stored": true, "req-false-positive": true}}
		admit := func(name string, pc es.PreChecker, id string) (bool, error) {
			h := f.rec.Invoke("precheck:"+name, "admit?", id)
			ok, err := pc.Admit(r.Context(), agg, id)
			h.OK(fmt.Sprintf("admit=%v err=%v", ok, err))
			return ok, err
		}
		chain := t.Caps.PreCheck(fast, f.store)
		ok, err := admit("with-authority", chain, "req-stored")
		r.Expect(err).NotTo(gomega.HaveOccurred(), "pre-check of a stored request id")
		r.Expect(ok).To(gomega.BeFalse(), "a 'maybe' confirmed by the authoritative query is rejected")
		ok, err = admit("with-authority", chain, "req-false-positive")
		r.Expect(err).NotTo(gomega.HaveOccurred(), "pre-check of a false positive")
		r.Expect(ok).To(gomega.BeTrue(), "a false positive of the fast checker, refuted by the authoritative query, is let through")
		ok, err = admit("with-authority", chain, "req-new")
		r.Expect(err).NotTo(gomega.HaveOccurred(), "pre-check of a new request id")
		r.Expect(ok).To(gomega.BeTrue(), "a request id the fast checker has never seen is let through")

		closed := t.Caps.PreCheck(fast, nil)
		ok, _ = admit("no-authority", closed, "req-false-positive")
		r.Expect(ok).To(gomega.BeFalse(), "with no authoritative query a 'maybe' is rejected (fail closed)")
		ok, _ = admit("no-authority", closed, "req-new")
		r.Expect(ok).To(gomega.BeTrue(), "with no authoritative query a clear 'no' from the fast checker is let through")

		broken := t.Caps.PreCheck(fast, failingAuthority{})
		ok, _ = admit("failing-authority", broken, "req-false-positive")
		r.Expect(ok).To(gomega.BeFalse(), "when the authoritative query fails a 'maybe' is rejected, not admitted")
		r.Ev.Notef("maybe→authority confirmed; false positive admitted; no or failing authority rejected")
	})
}
