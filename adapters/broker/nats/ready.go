package nats

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/internal/poll"
)

// A server the kit starts is ready when a client can connect and do the
// first thing the rules need: a JetStream account info request. A listening
// monitoring port, or a listening client port, is not enough (the client
// port can open a few milliseconds after the monitoring port; JetStream can
// answer after the client port).
//
// The wait for it is ReadyBase times Slowness(), at most ReadyMax: on a
// machine busy with other work the same start takes longer, and a fixed
// deadline tuned on an idle machine turns that into a false failure.
const (
	ReadyBase = 10 * time.Second
	ReadyMax  = 2 * time.Minute
)

// calibration is a fixed piece of CPU work (hashing 4 MiB) and the time it
// takes on an idle 2-core development machine (3.3-3.5 ms measured; 4 ms kept); Slowness compares this
// machine's time, now, with it.
const (
	calibrationBytes = 4 << 20
	calibrationIdle  = 4 * time.Millisecond
)

var (
	slowOnce sync.Once
	slow     float64
)

// Slowness is how much slower than the idle reference machine this one is
// now, measured once per process (five rounds of a fixed hash, the median),
// never below 1 and at most 10. It scales the kit's readiness deadlines.
func Slowness() float64 {
	slowOnce.Do(func() {
		buf := make([]byte, calibrationBytes)
		var rounds []time.Duration
		for range 5 {
			t0 := time.Now()
			_ = sha256.Sum256(buf)
			rounds = append(rounds, time.Since(t0))
		}
		slices.Sort(rounds)
		slow = min(max(float64(rounds[2])/float64(calibrationIdle), 1), 10)
	})
	return slow
}

// readyWait is the deadline of one readiness wait.
func readyWait() time.Duration {
	return min(time.Duration(float64(ReadyBase)*Slowness()), ReadyMax)
}

// ping connects to url and asks JetStream for the account's info, each step
// bounded by a second, and closes the connection again.
func ping(ctx context.Context, url string) error {
	nc, err := natsgo.Connect(url, natsgo.Timeout(time.Second), natsgo.NoReconnect(), natsgo.Name("onceproof-ready"))
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		return fmt.Errorf("JetStream account info: %w", err)
	}
	return nil
}

// waitReady pings url until it answers, the wait (readyWait) passes, ctx
// ends, or exited (the server process ended; nil if none) is closed. The
// error names the server, the wait and the last attempt's error.
func waitReady(ctx context.Context, what, url string, exited <-chan struct{}) error {
	wait := readyWait().Round(100 * time.Millisecond)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The process ending stops the wait too.
	ctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	var died atomic.Bool
	if exited != nil {
		go func() {
			select {
			case <-exited:
				died.Store(true)
				stopWait()
			case <-ctx.Done():
			}
		}()
	}
	t0 := time.Now()
	err := poll.Until(ctx, 10*time.Millisecond, 250*time.Millisecond, func() error { return ping(ctx, url) })
	switch {
	case err == nil:
		return nil
	case died.Load():
		return fmt.Errorf("%s exited before it was ready (last attempt: %v)", what, err)
	}
	bound := fmt.Sprintf("the readiness wait %s = %s x machine slowness %.2f", wait, ReadyBase, Slowness())
	if parent.Err() != nil {
		bound = "the caller's deadline, before " + bound
	}
	return fmt.Errorf("%s not ready after %s (%s): last attempt: %v",
		what, time.Since(t0).Round(time.Millisecond), bound, err)
}
