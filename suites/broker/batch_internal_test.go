package broker

import (
	"testing"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/mq"
)

// A declaration decides whether the batch rules apply: NATS streams that
// all say allow_atomic false make them not-applicable, one that allows it
// (or a declaration without the setting, another broker's) leaves them.
func TestBatchRulesFollowTheDeclaration(t *testing.T) {
	stream := func(allow string) kithooks.DeclaredStream {
		s := kithooks.DeclaredStream{Topic: mq.TopicInfo{Name: "orders", Settings: map[string]string{}}}
		if allow != "" {
			s.Topic.Settings["allow_atomic"] = allow
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		streams []kithooks.DeclaredStream
		na      bool
	}{
		{"none allows", []kithooks.DeclaredStream{stream("false"), stream("false")}, true},
		{"one allows", []kithooks.DeclaredStream{stream("false"), stream("true")}, false},
		{"not said", []kithooks.DeclaredStream{stream("")}, false},
	} {
		kept := map[string]string{"BR-2.9": "the target's own reason"}
		got := batchesDeclared(&kithooks.Declared{Streams: tc.streams}, target{Target: Target{NotApplicable: kept}})
		for _, id := range []string{"BR-8.1", "BR-8.2", "BR-8.3"} {
			if _, na := got.NotApplicable[id]; na != tc.na {
				t.Errorf("%s: %s not-applicable %v, want %v", tc.name, id, na, tc.na)
			}
		}
		if got.NotApplicable["BR-2.9"] != "the target's own reason" || len(kept) != 1 {
			t.Errorf("%s: the target's own reasons changed: %v (the caller's map %v)", tc.name, got.NotApplicable, kept)
		}
	}
}
