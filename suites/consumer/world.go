package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// world is what a rule body drives, whatever the consumer is: the steps it
// plays (steps.go), the messages published and acked (messages.go), the
// tripwires that crash an instance (tripwire.go), the sink calls the kit
// fails (faults.go), settling and the gates of two workers (settle.go),
// the model, and the history. It exists once; a transport is how a
// delivery reaches the consumer and how a crash is done:
//
//   - inproc (inproc.go, inproc_calls.go): a consumer built against
//     package co, its deliveries handed over and its calls wrapped inside
//     the test binary, a crash the end of an instance;
//   - blackbox (blackbox.go, blackbox_wire.go): a consumer service run as
//     its own process, its deliveries and acks seen in a proxy in front of
//     NATS and its effects at HTTP sinks, a crash SIGKILL of a replica.
//
// The rule bodies are in co1_scopes.go to co5_schedule.go.
type world struct {
	r     *spec.R
	ev    *verdict.Evidence
	ctx   context.Context // ends with the rule; every goroutine of the world watches it
	t     Target
	rec   *history.Recorder
	tr    transport
	words wording
	tag   string // makes message ids unique to the rule and run

	// seed and src draw the rule's generated values (versions.go): the
	// figure "seed"; Target.Seed replays them.
	seed     int64
	src      *gen.Source
	versions map[string]int64 // message base -> its version 1, drawn at a boundary
	edges    gen.Tally
	edge     gen.CalendarEdge                // the boundary the consumer's clock crosses (in process)
	clockNow func() time.Time                // the consumer's clock (in process; nil for a service)
	scale    float64                         // its seed time per real time (in process)
	keepOps  func([]history.Op) []history.Op // when set, the part of the timeline the evidence keeps

	model   *model
	replays int

	mu          sync.Mutex
	msgs        map[string]*msgState // by broker message id
	order       []string
	unacked     int                  // messages of msgs not acked
	acks        int                  // messages acked so far
	ackedAt     map[string]time.Time // event id -> when a message of it was first acked
	slowestAck  time.Duration        // the longest from a delivery to its ack in this rule: settle's pace
	wires       []*tripwire
	crashes     int
	loseAck     map[string]int // event id -> acks still to lose
	lostAcks    int
	faults      []*fault
	faultsFired int
	flakyCalls  *flakyCalls          // later calls fail too (callfaults.go), in the rules that arm it
	ackFaults   map[string]faultKind // event id -> how its next ack fails
	acksFailed  int
	ackedFailed []string // deliveries acked with a failed effect not called again
	errs        []string // errors the kit did not cause (the consumer's, a service's own exits)
	gates       map[string]*gate
	first       map[string]*calls // the calls of the first delivery of each event id
	lateEffects int               // effect calls after their event's ack (quiesce.go)
	lag         time.Duration     // the longest of their delays
	quietWaits  int               // waits for effects that ended in a quiet period
	quietUsed   time.Duration     // the longest quiet period waited

	lastCall atomic.Int64 // when the kit last saw a call or made a delivery (Unix ns)
}

// transport is what differs between an in-process consumer and a
// consumer service: how a message reaches the broker and the consumer,
// when a step is quiet, why it did not settle, and what the sinks hold.
type transport interface {
	// send puts e on the rule's topic under brokerID: where it went, or
	// whether the broker dropped it as a duplicate.
	send(e co.Event, brokerID string) (where string, duplicate bool, err error)
	// quiet reports that nothing is in flight beyond the pending messages.
	quiet() bool
	// handling reports that the consumer is inside a call of the kit's
	// (a Handle not yet returned): working, or waiting on its own lock.
	handling() bool
	// unsettled ends the rule when the transport knows why a step did not
	// settle; if it returns, the consumer just never acked.
	unsettled(waiting []string)
	// stepped checks what must hold after every settled step.
	stepped()
	// judging runs before the sinks are judged (a Reconcile after crashes).
	judging()
	// observed is every effect the sinks saw, and their documents.
	observed() ([]sinks.Effect, map[string]co.Doc)
	// killsAnywhere says whether the transport can end a worker at any
	// moment (kill), not only at the points a tripwire names.
	killsAnywhere() bool
	kill(k *anyKill, event string)
	// twoAtOnce is why two workers cannot hold one event at once, or "".
	twoAtOnce() string
	// stop ends the workers (the world's context has ended) and puts what
	// the transport saw in the evidence; release frees what it holds,
	// after the timeline is in.
	stop()
	release()
}

// wording is how the evidence and the verdicts speak of a transport.
type wording struct {
	who      string // "consumer", "service"
	crashes  string // the note of the crash figure
	lostAcks string // the note of the lost-ack figure
	errs     string // the note of the consumer-error figure
	observed string // the note of the sink figures
	settle   time.Duration
	poll     time.Duration
	// redeliver is the broker's ack wait in real time: a delivery whose
	// ack was lost (the kit swallowed it, a crash took it) comes again
	// only after it, so settle never gives up sooner.
	redeliver time.Duration
}

// open builds the rule's world for t.
func open(r *spec.R, t Target) *world { return openWith(r, t, openOpts{}) }

// openOpts tune an in-process world.
type openOpts struct {
	midnight    bool // the consumer's clock starts before a boundary that is at least a midnight
	quickNotify bool // notifications take no time (a rule of many events, not of races)
}

// openWith is open with options for an in-process world.
func openWith(r *spec.R, t Target, o openOpts) *world {
	if t.Service != nil {
		return openBlackbox(r, t).world
	}
	return openInproc(r, t, o).world
}

// newWorld is the part of every world that is not the transport's.
func newWorld(r *spec.R, t Target, ctx context.Context) *world {
	watchKit(r)
	seed := gen.Seed(t.Seed)
	r.Ev.Figure("seed", seed, "draws the rule's versions, its clock's start and its schedule; Target.Seed (tck run --seed) replays them")
	return &world{
		r: r, ev: r.Ev, ctx: ctx, t: t, rec: history.New(), tag: runTag(r.ID),
		seed: seed, src: gen.NewSource(seed), versions: map[string]int64{}, edges: gen.Tally{},
		model: newModel(t.Declared.Scopes),
		msgs:  map[string]*msgState{}, ackedAt: map[string]time.Time{}, loseAck: map[string]int{}, gates: map[string]*gate{},
		first: map[string]*calls{},
	}
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
// "m-9@co-1.2-3fa1b2"). version counts the message's versions in the
// rule's script (1, 2, 3); the event carries the version drawn for it
// (versions.go), so that version 1 to 2 crosses a boundary.
func (w *world) event(base string, version int) co.Event {
	return co.NewEvent(base+w.suffix(), w.version(base, version))
}

// suffix is what ends every message id of the rule and run.
func (w *world) suffix() string { return "@" + w.tag }

// crashed counts one crash the kit did.
func (w *world) crashed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crashes++
}

func (w *world) noteErr(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, msg)
}

// requireTwoAtOnce makes a rule that needs two workers holding one event
// at once not applicable when the transport cannot give that.
func (w *world) requireTwoAtOnce() {
	if why := w.tr.twoAtOnce(); why != "" {
		w.r.NotApplicable("%s", why)
	}
}

// close ends the world: the transport stops its workers, the figures and
// the history go into the evidence, then the transport frees what it holds.
func (w *world) close(cancel context.CancelFunc) {
	cancel()
	w.tr.stop()
	w.mu.Lock()
	if len(w.edges) > 0 {
		w.ev.Figure("version boundaries crossed", w.edges.String(), "messages whose versions 1 -> 2 of the rule cross v -> v+1 at a boundary of this class")
	}
	w.ev.Figure("crashes injected", w.crashes, w.words.crashes)
	w.ev.Figure("broker messages published", len(w.order), "")
	if w.lostAcks > 0 {
		w.ev.Figure("acks lost by the kit", w.lostAcks, w.words.lostAcks)
	}
	if w.faultsFired > 0 {
		w.ev.Figure("sink calls failed by the kit", w.faultsFired, "")
	}
	if w.acksFailed > 0 {
		w.ev.Figure("acks failed by the kit", w.acksFailed, "an error before the broker took it, or a timeout after")
	}
	// Every error the kit did not cause: a correct consumer on a correct
	// broker adapter has none.
	w.figureLateEffects()
	w.ev.Figure(figureConsumerErrors, len(w.errs), w.words.errs)
	if len(w.errs) > 0 {
		w.ev.Figure("first consumer error", w.errs[0], "")
	}
	w.mu.Unlock()
	ops := w.rec.Ops()
	if w.keepOps != nil {
		ops = w.keepOps(ops)
	}
	w.ev.Record(ops)
	w.tr.release()
}

// sleep waits d or until ctx ends: a worker's back-off.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
