package consumer_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/onceproof/tck/suites/consumer/embedded"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/outbox"
	"github.com/onceproof/tck/suites/consumer"
)

// TestPausedConsumerRule stops a consumer rule (this test binary, re-run on
// the helper below) with SIGSTOP for 6 s in the middle of a Handle call of
// its schedule: longer than a step's settle bound (5 s) and the handle
// deadline (2 s), both real time. The pause is the kit's, so the reference
// consumer must still pass: not blocked, not unsettled.
func TestPausedConsumerRule(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a consumer rule stopped for 6 s")
	}
	cmd := exec.Command(os.Args[0], `-test.run=^TestStalledConsumerHelper$/^CO-5\.1$`, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ONCEPROOF_STALL_HELPER=1")
	var logs strings.Builder
	cmd.Stderr = &logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	paused := false
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !paused && sc.Text() == "handling" {
			// The helper is inside Handle now (it sleeps there a little).
			paused = true
			_ = cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(6 * time.Second)
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	err = cmd.Wait()
	s := strings.Join(lines, "\n") + "\n" + logs.String()
	if !paused {
		t.Fatalf("the helper never got to the Handle call to pause:\n%s", s)
	}
	if err != nil || !strings.Contains(s, "--- PASS: TestStalledConsumerHelper/CO-5.1") {
		t.Fatalf("the reference consumer did not pass CO-5.1 after the kit was paused (%v):\n%s", err, s)
	}
}

// TestStalledConsumerHelper is the child of TestPausedConsumerRule: the
// reference consumer, whose 40th Handle call says "handling" and sleeps
// 100 ms, so the parent's SIGSTOP lands inside it.
func TestStalledConsumerHelper(t *testing.T) {
	if os.Getenv("ONCEPROOF_STALL_HELPER") != "1" {
		t.Skip("run by TestPausedConsumerRule in a child process")
	}
	d := reference.Reference()
	ref := d.Factory()
	var calls atomic.Int64
	consumer.Check(t, consumer.Target{
		Broker: sharedNATS(t),
		New: func(ctx context.Context, env co.Env) (co.Consumer, error) {
			c, err := ref(ctx, env)
			if err != nil {
				return nil, err
			}
			return hooked{c, &calls}, nil
		},
		Declared: d.Declared(),
		Outbox:   outbox.Factory,
	}, embedded.NATS())
}

// hooked is a consumer whose 40th Handle call tells the parent and waits a
// little (the reference has no Reconcile to keep).
type hooked struct {
	co.Consumer
	calls *atomic.Int64
}

func (h hooked) Handle(ctx context.Context, d co.Delivery) error {
	if h.calls.Add(1) == 40 {
		fmt.Println("handling")
		time.Sleep(100 * time.Millisecond)
	}
	return h.Consumer.Handle(ctx, d)
}
