package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestMemory runs the whole suite against the reference store at the
// default settings. Every rule passes, except that a race rule may end
// unknown at its cap short of its floor of contended trials: in-memory appends take
// microseconds, and on a runner whose cores are busy with other work two
// writers' calls rarely overlap. That is the honest verdict (the kit could
// not gather the evidence), never a pass on too little, and never a fail.
func TestMemory(t *testing.T) {
	db := memory.NewDB()
	target := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New},
	}
	for _, r := range runner.Run("eventstore/memory", func() { eventstore.Register(target) }, runner.Options{}) {
		race := strings.HasPrefix(r.Rule, "ES-2.")
		switch {
		case r.Verdict == verdict.Pass:
		case race && r.Verdict == verdict.Unknown && strings.Contains(r.Reason, "fewer than the floor"):
			t.Logf("%s unknown on this machine's load: %s", r.Rule, r.Reason)
		default:
			t.Errorf("%s %s: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
}
