package eventstore_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// Every goroutine a rule starts (race writers, the fault) ends before its
// rule does: a whole Check of the reference leaves none behind, with and
// without a fault.
func TestCheckLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	db := memory.NewDB()
	target := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New},
		// What is checked here is goroutines, not power: a 10% power
		// target keeps the race rules decided on a loaded runner, where
		// in-memory appends rarely overlap.
		Race: eventstore.RaceConfig{Power: 0.1},
	}
	t.Run("plain", func(t *testing.T) { eventstore.Check(t, target) })
	target.Race.Cap = 5 * time.Second
	hooks := spec.With(kithooks.EventStore{Disrupt: func(ctx context.Context, _ string, log verdict.Log) error {
		log.Note("nemesis", "pause", "db", "")
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return nil
	}})
	t.Run("disrupted", func(t *testing.T) { eventstore.Check(t, target, hooks) })
}

// A store that leaves a rule undecided fails `go test`, and a -run pattern
// naming one rule runs that rule alone. The failing run happens in a child
// process (this test binary, re-run on the helper below) so that its
// failure can be observed instead of failing this test.
func TestUndecidedRuleFailsCheck(t *testing.T) {
	cmd := exec.Command(os.Args[0], `-test.run=^TestCheckHelperHangingLoad$/^ES-1\.2$`, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ONCEPROOF_CHECK_HELPER=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("go test with an undecided rule: want a failing exit, got %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "--- FAIL: TestCheckHelperHangingLoad/ES-1.2") || !strings.Contains(s, "unknown") {
		t.Errorf("ES-1.2 is not reported as a failure naming the unknown verdict:\n%s", s)
	}
	if n := strings.Count(s, "=== RUN   TestCheckHelperHangingLoad/"); n != 1 {
		t.Errorf("%d rules ran, want exactly one:\n%s", n, s)
	}
}

// TestCheckHelperHangingLoad is the child of TestUndecidedRuleFailsCheck:
// a store whose Load never returns.
func TestCheckHelperHangingLoad(t *testing.T) {
	if os.Getenv("ONCEPROOF_CHECK_HELPER") != "1" {
		t.Skip("run by TestUndecidedRuleFailsCheck in a child process")
	}
	db := memory.NewDB()
	eventstore.Check(t, eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) {
			return misbehaving{EventStore: db.Open(), hangs: true}, nil
		},
		Timeout: 200 * time.Millisecond,
	})
}
