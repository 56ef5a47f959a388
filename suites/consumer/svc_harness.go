package consumer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/httpsinks"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// svcHarness is one rule's world for a consumer service run as its own
// process (Target.Service): a fresh stream and durable consumer behind the
// kit's proxy, fresh HTTP sinks, a fresh data directory, the replicas, the
// model, and the history. It plays the same steps as the in-process harness
// and judges the same way, from the sinks' records and the broker's
// read-back; what the kit cannot reach inside the process (its store, its
// clock) it does not touch. The crash points map onto what the kit sees
// from outside:
//
//	before-effect / after-effect  a sink call arrived / was applied, not yet answered
//	before-ack / after-ack        an ack reached the proxy / was forwarded to the broker
//	before-call / after-call n    the n-th sink call or ack since the replica's last delivery
//
// A crash is SIGKILL of the replica's process group; its supervisor starts
// it again with the same configuration at once.
type svcHarness struct {
	r   *spec.R
	ev  *verdict.Evidence
	ctx context.Context
	t   Target
	s   Service
	rec *history.Recorder

	ch      Channel
	sinks   *httpsinks.Server
	dir     string
	data    string
	rmDir   func()
	workers []*svcWorker
	sup     sync.WaitGroup
	bg      sync.WaitGroup // random kills in flight
	rnd     *rand.Rand     // the moments of CO-5.1's random kills

	model   *model
	replays int
	tag     string

	pubMu       sync.RWMutex // held by publish until the sequence is known
	mu          sync.Mutex
	callNs      map[int]int          // sink call seq -> its number in the delivery
	msgs        map[string]*msgState // by broker message id
	bySeq       map[uint64]string    // stream sequence -> broker message id
	order       []string
	plans       []*plan
	loseAck     map[string]int
	lostAcks    int
	faults      []*fault
	faultsFired int
	loseAnswer  map[int]bool // sink call seq -> lose its answer
	crashes     int
	randomKills int
	kills       []svcKill
	restarts    int
	errs        []string // the service's own exits, failed restarts
	setupErrs   []string // the kit's own failures
	ackedFailed []string
	terms       []string // the kit's events the service terminated (+TERM): lost
	gates       map[string]*gate
	first       map[string]*svcDelivery
	callOps     map[int]history.Handle // sink call seq -> its op
}

// svcKill is one SIGKILL, for the evidence.
type svcKill struct {
	worker, why string
	run         int
	at          time.Time
}

type svcWorker struct {
	h    *svcHarness
	name string
	p    *procs.Proc

	mu        sync.Mutex
	killedRun int // the run the kit killed last
	cur       *svcDelivery
	pulled    int // the run that pulled last
	selfExit  int
}

// svcDelivery is one delivery to a replica as seen on the wire.
type svcDelivery struct {
	w        *svcWorker
	brokerID string
	e        co.Event
	seq      uint64
	attempt  int
	run      int
	doubt    uncertain

	mu    sync.Mutex
	calls []string
	ackN  int
	ackOp *history.Handle
}

func (d *svcDelivery) count(label string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, label)
	return len(d.calls)
}

func (d *svcDelivery) trace() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func (s Service) withDefaults() Service {
	if s.Workers <= 0 {
		s.Workers = 2
	}
	if s.AckWait <= 0 {
		s.AckWait = 2 * time.Second
	}
	if s.MaxDeliver <= 0 {
		s.MaxDeliver = 20
	}
	if s.Ready <= 0 {
		s.Ready = 60 * time.Second
	}
	if s.Settle <= 0 {
		s.Settle = 30 * time.Second
	}
	return s
}

// newSvcHarness builds the world and starts the replicas; r's cleanups
// stop them and remove everything.
func newSvcHarness(r *spec.R, t Target) *svcHarness {
	watchKit(r)
	s := t.Service.withDefaults()
	ctx, cancel := context.WithCancel(r.Context())
	h := &svcHarness{
		r: r, ev: r.Ev, ctx: ctx, t: t, s: s, rec: history.New(), tag: runTag(r.ID),
		model: newModel(t.Declared.Scopes),
		msgs:  map[string]*msgState{}, bySeq: map[uint64]string{}, loseAck: map[string]int{},
		loseAnswer: map[int]bool{}, gates: map[string]*gate{}, first: map[string]*svcDelivery{},
		callOps: map[int]history.Handle{},
	}
	seed := time.Now().UnixNano()
	h.rnd = rand.New(rand.NewPCG(uint64(seed), 0))
	r.DeferCleanup(func() { h.close(cancel) })
	if r.ID == "CO-5.1" {
		h.ev.Figure("random kills", fmt.Sprintf("%.0f%% of the steps also kill a random replica 0-40 ms after the publish", 100*pRandomKill), "")
		h.ev.Figure("random kill seed", seed, "the moments, not the schedule (the schedule's seed is \"seed\")")
	}
	if err := s.Envelope.Check(); err != nil {
		r.Unknown("the service's event envelope: %v", err)
	}
	h.ev.Figure("event envelope", s.Envelope.String(), "")
	if err := h.makeDir(); err != nil {
		r.Unknown("making the service's data directory: %v", err)
	}
	sk, err := httpsinks.Start()
	if err != nil {
		r.Unknown("starting the HTTP sinks: %v", err)
	}
	h.sinks = sk
	sk.SetHook(h.sinkHook)
	ch, err := s.Broker.Open(r.Context(), strings.ReplaceAll(h.tag, ".", "-"), s.AckWait, s.MaxDeliver)
	if err != nil {
		r.Unknown("creating the rule's stream and durable consumer: %v", err)
	}
	h.ch = ch
	ch.Watch(h.wireHook)
	h.ev.Figure("service replicas", s.Workers, "sharing one data directory")
	h.ev.Figure("broker ack wait", s.AckWait.String(), "declared on the durable consumer, real time")
	h.ev.Figure("broker max deliver", s.MaxDeliver, "")
	h.ev.Figure("service command", strings.Join(s.Args, " "), "")
	for i := 1; i <= s.Workers; i++ {
		w, err := h.startWorker(fmt.Sprintf("W%d", i))
		if err != nil {
			r.Unknown("starting the service: %v", err)
		}
		h.workers = append(h.workers, w)
	}
	for _, w := range h.workers {
		h.waitPulled(w, 1)
	}
	return h
}

// makeDir creates the rule's kit-owned directory, registered with
// leftovers (kept with Service.Keep).
func (h *svcHarness) makeDir() error {
	return leftovers.Create(func() error {
		d, err := os.MkdirTemp("", "onceproof-service-"+h.r.ID+"-")
		if err != nil {
			return err
		}
		untrack := func() {}
		if !h.s.Keep {
			untrack = leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		}
		h.dir, h.data = d, filepath.Join(d, "data")
		// Removed by close, after the replicas are gone.
		h.rmDir = func() {
			if !h.s.Keep && os.RemoveAll(d) == nil {
				untrack()
			}
		}
		return os.Mkdir(h.data, 0o700)
	})
}

func (h *svcHarness) startWorker(name string) (*svcWorker, error) {
	env := map[string]string{}
	for k, v := range h.s.Env {
		env[k] = v
	}
	benv, err := h.ch.Env(name)
	if err != nil {
		return nil, err
	}
	for k, v := range benv {
		env[k] = v
	}
	env[EnvAckWait] = h.s.AckWait.String()
	env[EnvMaxDeliver] = strconv.Itoa(h.s.MaxDeliver)
	env[EnvDataDir] = h.data
	env[EnvIndexURL] = h.sinks.Base(name) + "/index"
	env[EnvNotifyURL] = h.sinks.Base(name) + "/notify"
	env[EnvWorker] = name
	env[EnvRule] = h.r.ID
	w := &svcWorker{h: h, name: name}
	op := h.rec.Invoke(name, "start", "")
	p, err := procs.Start(h.ctx, procs.Config{Name: "consumer service " + name, Args: h.s.Args, Dir: h.s.Dir, Env: env, Kill: h.s.Kill})
	if err != nil {
		op.Info(err.Error())
		return nil, err
	}
	op.OK(fmt.Sprintf("run 1, pid %d", p.Pid()))
	w.p = p
	h.sup.Add(1)
	go w.supervise()
	return w, nil
}

// actor names a replica's current run on the timeline ("W1#3").
func (w *svcWorker) actor() string { return fmt.Sprintf("%s#%d", w.name, w.p.Run()) }

// supervise restarts the replica whenever its run ends: at once after a
// kill of the kit's; after a short back-off, and noted as the service's
// own failure, when it exited by itself.
func (w *svcWorker) supervise() {
	h := w.h
	defer h.sup.Done()
	for {
		select {
		case <-w.p.Exited():
		case <-h.ctx.Done():
			return
		}
		if h.ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		killed := w.killedRun == w.p.Run() // only the supervisor restarts: this is the run that ended
		w.mu.Unlock()
		if !killed {
			w.selfExit++
			msg := fmt.Sprintf("%s exited by itself (%v)", w.actor(), w.p.ExitErr())
			h.rec.Note(w.actor(), "exit", "", fmt.Sprintf("%v", w.p.ExitErr()))
			h.noteErr(msg + "; its last output: " + w.p.Tail(800))
			if w.selfExit >= 5 {
				h.rec.Note(w.name, "restart", "", "given up after 5 exits of its own")
				return
			}
			sleep(h.ctx, 200*time.Millisecond)
		}
		op := h.rec.Invoke(w.name, "restart", "")
		if err := w.p.Restart(h.ctx); err != nil {
			op.Info(err.Error())
			if h.ctx.Err() == nil {
				h.mu.Lock()
				h.setupErrs = append(h.setupErrs, fmt.Sprintf("restarting %s: %v", w.name, err))
				h.mu.Unlock()
			}
			return
		}
		h.mu.Lock()
		h.restarts++
		h.mu.Unlock()
		op.OK(fmt.Sprintf("run %d, pid %d, same configuration", w.p.Run(), w.p.Pid()))
	}
}

// waitPulled waits until the replica's run (at least run) has pulled from
// its consumer: the black box's sign that it is ready.
func (h *svcHarness) waitPulled(w *svcWorker, run int) {
	wait := gomega.NewGomega(func(string, ...int) {})
	ok := wait.Eventually(func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.pulled >= run
	}).WithContext(h.ctx).WithTimeout(h.s.Ready).WithPolling(10 * time.Millisecond).Should(gomega.BeTrue())
	if !ok {
		h.ev.Notef("output of %s: %s", w.name, w.p.Tail(2000))
		h.r.Unknown("the service %s did not pull from its durable consumer within %s of its start (see its output in the evidence)", w.name, h.s.Ready)
	}
}

// crash kills w's current run (SIGKILL to its process group) and lets its
// supervisor start it again.
func (h *svcHarness) crash(w *svcWorker, why, event string) {
	run, pid := w.p.Run(), w.p.Pid()
	w.mu.Lock()
	w.killedRun = run
	w.mu.Unlock()
	op := h.rec.Invoke(fmt.Sprintf("%s#%d", w.name, run), "SIGKILL", event)
	killed, err := w.p.KillRun(run)
	switch {
	case err != nil:
		op.Info(err.Error())
	case !killed:
		op.Info(fmt.Sprintf("run %d had already ended: %s", run, why))
		return
	default:
		op.OK(fmt.Sprintf("pid %d: %s", pid, why))
	}
	h.mu.Lock()
	h.crashes++
	h.kills = append(h.kills, svcKill{worker: w.name, why: why + " (" + event + ")", run: run, at: time.Now()})
	h.mu.Unlock()
}

func (h *svcHarness) worker(name string) *svcWorker {
	for _, w := range h.workers {
		if w.name == name {
			return w
		}
	}
	return nil
}

func (w *svcWorker) current() *svcDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

func (h *svcHarness) noteErr(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, msg)
}

// close stops the replicas, puts the history and the output around every
// kill in the evidence, and releases the stream and the sinks.
func (h *svcHarness) close(cancel context.CancelFunc) {
	cancel()
	h.bg.Wait()
	for _, w := range h.workers {
		if w.p != nil {
			_ = w.p.Stop(0)
		}
	}
	h.sup.Wait()
	h.mu.Lock()
	kills, errs := append([]svcKill(nil), h.kills...), append([]string(nil), h.errs...)
	h.ev.Figure("crashes injected", h.crashes, "SIGKILL of a replica's process group")
	if h.randomKills > 0 {
		h.ev.Figure("kills at random moments", h.randomKills, "included in the crashes")
	}
	h.ev.Figure("restarts", h.restarts, "same command, environment and data directory")
	h.ev.Figure("broker messages published", len(h.order), "")
	if h.lostAcks > 0 {
		h.ev.Figure("acks lost by the kit", h.lostAcks, "dropped in the proxy")
	}
	if h.faultsFired > 0 {
		h.ev.Figure("sink calls failed by the kit", h.faultsFired, "")
	}
	h.ev.Figure(figureConsumerErrors, len(errs), "exits of its own")
	h.mu.Unlock()
	if len(errs) > 0 {
		h.ev.Figure("first consumer error", errs[0], "")
	}
	// The output of the first kills, from 3 s before each to 1 s after
	// (the restart's first lines).
	const shown = 6
	for i, k := range kills {
		if i == shown {
			h.ev.Figure("kills without their output here", len(kills)-shown, "see the timeline")
			break
		}
		w := h.worker(k.worker)
		out := procs.Render(w.p.LinesBetween(k.at.Add(-3*time.Second), k.at.Add(time.Second)), 1500)
		if out == "" {
			out = "(no output)"
		}
		h.ev.Figure(fmt.Sprintf("output around SIGKILL %d: %s run %d, %s", i+1, k.worker, k.run, k.why), out, "")
	}
	for _, w := range h.workers {
		if w.p != nil {
			h.ev.Figure("output of "+w.name+" (last lines)", w.p.Tail(1200), "")
		}
	}
	if h.s.Keep {
		h.ev.Figure("data directory (kept)", h.dir, "tck run --keep")
	}
	h.ev.Record(h.rec.Ops())
	if h.ch != nil {
		_ = h.ch.Close()
	}
	if h.sinks != nil {
		_ = h.sinks.Close()
	}
	if h.rmDir != nil {
		h.rmDir()
	}
}
