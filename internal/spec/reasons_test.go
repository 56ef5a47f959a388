package spec

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

// A rule needing a capability the target lacks is not-applicable naming the
// capability, and with the target's own reason when it gave one (Reasons);
// a reason for a rule whose capabilities are all there changes nothing.
func TestReasons(t *testing.T) {
	s := New("eventstore")
	s.Reasons = map[string]string{"ES-3.1": "this store has no request-id index", "ES-1.1": "ignored"}
	ran := false
	s.It("ES-3.1", func(r *R) { t.Error("ran without its capability") })
	s.It("ES-1.1", func(r *R) { ran = true })
	for _, ru := range s.rules {
		out := s.runOne(ru)
		switch ru.id {
		case "ES-3.1":
			if out.v != verdict.NotApplicable || !strings.HasPrefix(out.reason, "this store has no request-id index (") || !strings.Contains(out.reason, string(catalog.CapPreCheck)) {
				t.Errorf("ES-3.1: %s %q", out.v, out.reason)
			}
			// The report reads the missing capability from the result, not
			// from the reason's words.
			if res := resultOf(ru, "t", out, 0); len(res.Missing) != 1 || res.Missing[0] != string(catalog.CapPreCheck) {
				t.Errorf("ES-3.1 result missing %q, want [%s]", res.Missing, catalog.CapPreCheck)
			}
		case "ES-1.1":
			if out.v != verdict.Pass || !ran {
				t.Errorf("ES-1.1: %s %q, ran %v", out.v, out.reason, ran)
			}
			if res := resultOf(ru, "t", out, 0); res.Missing != nil {
				t.Errorf("ES-1.1 (applies) result missing %q", res.Missing)
			}
		}
	}
}
