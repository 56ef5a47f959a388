package eventstore

import (
	"testing"
	"time"

	"github.com/onceproof/tck/internal/kithooks"
)

// The Timeout a skip names must run the fill: a budget of at least the
// time needed (versionsBudget takes a Timeout only past 60 s).
func TestVersionsTimeoutForRunsTheFill(t *testing.T) {
	for _, need := range []time.Duration{6 * time.Second, 16 * time.Second, 86 * time.Second, 7*time.Minute + 25*time.Second} {
		to := versionsTimeoutFor(need)
		if b := versionsBudget(target{Target: Target{Timeout: to}}); b < need {
			t.Errorf("need %s: the Timeout named, %s, gives a budget of %s", need, to, b)
		}
		if b := versionsBudget(target{EventStore: kithooks.EventStore{MaxWait: need * 5 / 4}}); b < need {
			t.Errorf("need %s: the MaxWait named, %s, gives a budget of %s", need, need*5/4, b)
		}
	}
	if b := versionsBudget(target{}); b != versionsFill {
		t.Errorf("the default budget is %s, want %s", b, versionsFill)
	}
}
