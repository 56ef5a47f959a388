package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// workers is how many group members every rule runs: a redelivery after a
// crash may go to either, as in production.
const workers = 2

// harness is one rule's world: a fresh topic on the target's broker, fresh
// sinks and a fresh store file, workers in one consumer group, the model of
// what the sinks must hold, and the history of everything that happened.
//
// Its concerns live in files of their own: messages.go (what was published
// and acked), crash.go (where instances end), worker.go (instances and
// deliveries), wrappers.go (the sinks and the ack as a consumer sees them),
// settle.go (waiting for a step to be acked), play.go (steps and the model).
// The rules themselves are in co1_scopes.go to co5_schedule.go.
type harness struct {
	r   *spec.R
	ev  *verdict.Evidence
	ctx context.Context // ends with the rule; every goroutine of the harness watches it
	t   Target
	tm  Timing
	rec *history.Recorder

	broker    mq.Broker
	topic     string
	group     string
	clock     *sinks.Scaled
	index     *sinks.MemIndex
	notifier  *sinks.MemNotifier
	dir       string
	storePath string

	model   *model
	replays int
	tag     string // makes message ids unique to the rule and run

	reconciled int // crashes already followed by a Reconcile

	mu       sync.Mutex
	msgs     map[string]*msgState // by broker message id
	order    []string
	plans    []*plan
	loseAck  map[string]int // event id -> acks still to lose
	gates    map[string]*gate
	crashes  int
	lostAcks int
	panics   []string
	errs     []string // consumer errors: Handle errors the kit did not cause, failed starts
	blocked  []string

	faults      []*fault
	faultsFired int
	faultErrs   int                     // Handle errors after a sink call the kit failed: expected
	ackedFailed []string                // deliveries acked with a failed effect not called again
	refused     int                     // calls by ended instances
	first       map[string]*kitDelivery // the first delivery of each event id

	instances atomic.Int32
	inflight  atomic.Int32
	wg        sync.WaitGroup // the workers
	handlers  sync.WaitGroup // the Handle calls, abandoned ones included
}

// newHarness builds the world for the rule r runs and starts n workers.
// Everything is released by r's cleanups: the workers end, the topic is
// deleted, the broker handle and the files go.
func newHarness(r *spec.R, t Target, n int) *harness {
	watchKit(r)
	tm := t.Timing.withDefaults()
	dir, err := os.MkdirTemp("", "onceproof-"+r.ID+"-")
	if err != nil {
		r.Unknown("making a scratch directory: %v", err)
	}
	r.DeferCleanup(func() { _ = os.RemoveAll(dir) })
	b, err := t.Broker(r.Context())
	if err != nil {
		r.Unknown("the broker could not be opened: %v", err)
	}
	ctx, cancel := context.WithCancel(r.Context())
	clock := sinks.NewScaled(tm.Scale)
	tag := runTag(r.ID)
	h := &harness{
		r: r, ev: r.Ev, ctx: ctx, t: t, tm: tm, rec: history.New(), tag: tag,
		broker: b, topic: "co-" + strings.ReplaceAll(tag, ".", "-"), group: "consumer",
		clock: clock, index: sinks.NewIndex(clock), notifier: sinks.NewNotifier(clock, tm.NotifyLatency),
		dir: dir, storePath: filepath.Join(dir, "consumer-store.db"),
		model: newModel(t.Declared.Scopes),
		msgs:  map[string]*msgState{}, loseAck: map[string]int{}, gates: map[string]*gate{},
		first: map[string]*kitDelivery{},
	}
	r.DeferCleanup(func() { h.close(cancel) })
	if err := b.CreateTopic(r.Context(), h.topic, mq.TopicConfig{Retention: mq.Limits}); err != nil {
		r.Unknown("creating topic %s: %v", h.topic, err)
	}
	h.ev.Figure("clock scale", fmt.Sprintf("x%.0f (a seed minute is %s real)", tm.Scale, clock.Real(time.Minute)), "")
	h.ev.Figure("broker ack wait", fmt.Sprintf("%s seed = %s real", tm.AckWait, clock.Real(tm.AckWait)), "")
	for i := 1; i <= n; i++ {
		w := &worker{h: h, name: fmt.Sprintf("W%d", i)}
		h.wg.Add(1)
		go w.run()
	}
	return h
}

// figureConsumerErrors counts the errors the kit did not cause.
const figureConsumerErrors = "consumer errors"

// runTag is unique per rule and run ("co-1.2-3fa1b2"): it names the topic
// and ends every message id, so rules and runs never share a topic, a
// message, a de-dupe key or an index document.
func runTag(rule string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(rule) + "-" + hex.EncodeToString(b[:])
}

// event is (message, version) of the rule's own message base ("m-9" becomes
// "m-9@co-1.2-3fa1b2").
func (h *harness) event(base string, version int) co.Event {
	return co.NewEvent(h.msgID(base), version)
}

func (h *harness) msgID(base string) string { return base + "@" + h.tag }

// readLatency is how long the answer of a read (Store.Get, Index.Get,
// Notifier.Sent) takes to come back after the read was made.
func (h *harness) readLatency(ctx context.Context) { sleep(ctx, h.tm.ReadLatency) }

// firstDelivery keeps the first delivery of each event: its calls are the
// trace CO-2.5 crashes along.
func (h *harness) firstDelivery(kd *kitDelivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.first[kd.e.EventID]; !ok {
		h.first[kd.e.EventID] = kd
	}
}

// trace is what the first delivery of event called, in order.
func (h *harness) trace(event string) []string {
	h.mu.Lock()
	kd := h.first[event]
	h.mu.Unlock()
	if kd == nil {
		return nil
	}
	return kd.trace()
}

// ackedAfterFailure records an ack of a delivery whose effect call failed
// and was not called again.
func (h *harness) ackedAfterFailure(inst *instance, kd *kitDelivery, scopes []string) {
	msg := fmt.Sprintf("%s acked %s after its %s call failed, without calling it again", inst.name, kd.brokerID, strings.Join(scopes, ", "))
	h.rec.Note(inst.name, "ack after failure", kd.brokerID, msg)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ackedFailed = append(h.ackedFailed, msg)
}

// close stops the workers, waits for them, puts the history in the
// evidence and releases the topic and the broker handle.
func (h *harness) close(cancel context.CancelFunc) {
	cancel()
	h.wg.Wait()
	h.waitHandlers()
	h.ev.Figure("crashes injected", h.crashes, "")
	h.ev.Figure("consumer instances started", int(h.instances.Load()), "")
	h.ev.Figure("broker messages published", len(h.order), "")
	if h.lostAcks > 0 {
		h.ev.Figure("acks lost by the kit", h.lostAcks, "")
	}
	if h.faultsFired > 0 {
		h.ev.Figure("sink calls failed by the kit", h.faultsFired, "")
		h.ev.Figure("Handle errors after a failed sink call", h.faultErrs, "expected")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ev.Figure("calls refused after death", h.refused, "calls by instances the kit had ended")
	// Every error the kit did not cause (Handle errors, failed starts): a
	// correct consumer on a correct broker adapter has none.
	h.ev.Figure(figureConsumerErrors, len(h.errs), "")
	if len(h.errs) > 0 {
		h.ev.Figure("first consumer error", h.errs[0], "")
	}
	h.ev.Record(h.rec.Ops())
	// The rule's context may be over; the topic is deleted all the same.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = h.broker.DeleteTopic(ctx, h.topic)
	_ = h.broker.Close()
}

// waitHandlers waits a handle deadline for Handle calls still running: the
// rule's context has ended, so a consumer that watches it returns. One that
// does not is noted; its goroutine is the consumer's, and it stays.
func (h *harness) waitHandlers() {
	done := make(chan struct{})
	go func() { h.handlers.Wait(); close(done) }()
	t := time.NewTimer(h.tm.HandleDeadline)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		h.ev.Notef("a Handle call ignored the end of its context and was still running when the rule ended")
	}
}
