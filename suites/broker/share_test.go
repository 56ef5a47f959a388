package broker_test

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/verdict"
)

// TestShareRulesNotOnNATS: the BR-9 share-group rules are not-applicable on
// a broker without share groups, each naming the capability and why, and
// start no workload.
func TestShareRulesNotOnNATS(t *testing.T) {
	ids := []string{"BR-9.1", "BR-9.2", "BR-9.3", "BR-9.4"}
	res := register(embedded(t, nats.Client{}), ids...)
	for _, id := range ids {
		r := res[id]
		if r.Verdict != verdict.NotApplicable || !strings.Contains(r.Reason, "share-groups") || !strings.Contains(r.Reason, "KIP-932") {
			t.Errorf("%s on NATS: %s: %q, want not-applicable naming share-groups and KIP-932", id, r.Verdict, r.Reason)
		}
	}
}
