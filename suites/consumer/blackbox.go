package consumer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/httpsinks"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
)

// blackbox is the transport for a consumer service run as its own process
// (Target.Service): a fresh stream and durable consumer behind the kit's
// proxy (internal/coservice), fresh HTTP sinks, a fresh data directory, and
// the replicas. What the kit cannot reach inside the process (its store,
// its clock) it does not touch. The crash points map onto what the kit
// sees from outside (blackbox_wire.go):
//
//	before-effect / after-effect  a sink call arrived / was applied, not yet answered
//	before-ack / after-ack        an ack reached the proxy / was forwarded to the broker
//	before-call / after-call n    the n-th sink call or ack since the replica's last delivery
//
// A crash is SIGKILL of the replica's process group; its supervisor starts
// it again with the same configuration at once.
type blackbox struct {
	*world
	s Service

	ch      coservice.Channel
	sinks   *httpsinks.Server
	dir     string
	data    string
	rmDir   func()
	workers []*replica
	sup     sync.WaitGroup
	bg      sync.WaitGroup // kills at any moment in flight

	pubMu sync.RWMutex // held by send until the sequence is known
	// Under world.mu:
	bySeq      map[uint64]string // stream sequence -> broker message id
	callNs     map[int]int       // sink call seq -> its number in the delivery
	loseAnswer map[int]bool      // sink call seq -> lose its answer
	callOps    map[int]history.Handle
	anyKills   int
	kills      []svcKill
	restarts   int
	setupErrs  []string // the kit's own failures
	terms      []string // the kit's events the service terminated (+TERM): lost
}

// svcKill is one SIGKILL, for the evidence.
type svcKill struct {
	worker, why string
	run         int
	at          time.Time
}

// replica is one process of the service and its supervisor's state.
type replica struct {
	h    *blackbox
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
	w        *replica
	brokerID string
	e        co.Event
	seq      uint64
	attempt  int
	calls

	mu    sync.Mutex
	ackN  int
	ackOp *history.Handle
}

func (s Service) withDefaults() Service {
	if s.Broker.Kind == coservice.BrokerKafka && s.Workers == 0 {
		// One partition: a second replica of the group would hold no
		// partition and never fetch.
		s.Workers = 1
	}
	if s.Broker.Kind == coservice.BrokerKafkaShare {
		// The group's, not the service's: a member cannot ask for another.
		s.AckWait, s.MaxDeliver = s.Broker.Lock, s.Broker.DeliveryLimit
	}
	orDefault(&s.Workers, 2)
	orDefault(&s.AckWait, 2*time.Second)
	orDefault(&s.MaxDeliver, 20)
	orDefault(&s.Ready, 60*time.Second)
	orDefault(&s.Settle, 30*time.Second)
	return s
}

// openBlackbox builds the world and starts the replicas; r's cleanups stop
// them and remove everything.
func openBlackbox(r *spec.R, t Target) *blackbox {
	s := t.Service.withDefaults()
	// Started first, so it is stopped last: the world's cleanup deletes
	// the stream on it.
	natsURL := s.Broker.URL
	if s.Broker.Kind == "" {
		natsURL, _ = embeddedURL(r, t)
	} else {
		r.Ev.Figure("broker", s.Broker.Name, "the team's server; the rule's stream is created on it and removed at the rule's end")
	}
	ctx, cancel := context.WithCancel(r.Context())
	w := newWorld(r, t, ctx)
	h := &blackbox{world: w, s: s,
		bySeq: map[uint64]string{}, loseAnswer: map[int]bool{}, callNs: map[int]int{}, callOps: map[int]history.Handle{}}
	w.tr = h
	w.words = wording{who: "service", crashes: "SIGKILL of a replica's process group", lostAcks: "dropped in the proxy",
		errs: "exits of its own", observed: "over HTTP", settle: s.Settle, poll: 10 * time.Millisecond, redeliver: s.AckWait}
	r.DeferCleanup(func() { w.close(cancel) })
	envelope := coservice.Envelope(s.Envelope)
	if err := coservice.CheckEnvelope(envelope); err != nil {
		r.Unknown("the service's event envelope: %v", err)
	}
	h.ev.Figure("event envelope", coservice.Describe(envelope), "")
	if err := h.makeDir(); err != nil {
		r.Unknown("making the service's data directory: %v", err)
	}
	sk, err := httpsinks.Start()
	if err != nil {
		r.Unknown("starting the HTTP sinks: %v", err)
	}
	h.sinks = sk
	sk.SetHook(h.sinkHook)
	name := strings.ReplaceAll(h.tag, ".", "-")
	if t.hooks.Channel == nil {
		r.Unknown("a Service needs the kit's channel to its broker, which links the brokers' clients: pass embedded.NATS() of suites/consumer/embedded to Check or Register, or run it with tck run (consumer/process)")
	}
	url := s.Broker.URL
	if s.Broker.Kind == "" {
		url = natsURL
	}
	ch, err := t.hooks.Channel(r.Context(), s.Broker.Kind, url, name, s.AckWait, s.MaxDeliver, s.Broker.TLS)
	switch s.Broker.Kind {
	case coservice.BrokerKafka:
		if err != nil {
			r.Unknown("creating the rule's topic: %v", err)
		}
		h.ev.Figure("broker ack wait", "none", "Kafka has none: a service re-reads from its group's committed offset after a restart; the rules that need an unacked delivery to come back by itself are not applicable")
		h.ev.Figure("broker max deliver", "none", "Kafka has no max deliver")
	case coservice.BrokerKafkaShare:
		if err != nil {
			r.Unknown("creating the rule's topic and share group: %v", err)
		}
		h.ev.Figure("broker ack wait", s.AckWait.String(), "the share group's lock (group.share.record.lock.duration.ms), real time: a record not acknowledged within it is delivered again")
		h.ev.Figure("broker max deliver", s.MaxDeliver, "group.share.delivery.count.limit: a record released or timed out this often is archived")
	case coservice.BrokerRedis:
		if err != nil {
			r.Unknown("creating the rule's stream key and consumer group: %v", err)
		}
		h.ev.Figure("broker ack wait", s.AckWait.String(), "Redis has none: the service claims entries idle this long (XAUTOCLAIM min-idle-time), real time")
		h.ev.Figure("broker max deliver", "none", "Redis Streams has no max deliver")
	default:
		if err != nil {
			r.Unknown("creating the rule's stream and durable consumer: %v", err)
		}
		h.ev.Figure("broker ack wait", s.AckWait.String(), "declared on the durable consumer, real time")
		h.ev.Figure("broker max deliver", s.MaxDeliver, "")
	}
	h.ch = ch
	h.ch.Watch(h.wireHook)
	h.ev.Figure("service replicas", s.Workers, "sharing one data directory")
	h.ev.Figure("service command", strings.Join(s.Args, " "), "")
	for i := 1; i <= s.Workers; i++ {
		w, err := h.startReplica(fmt.Sprintf("W%d", i))
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
func (h *blackbox) makeDir() error {
	return leftovers.Create(func() error {
		d, err := leftovers.MkdirTemp("onceproof-service-" + h.r.ID + "-")
		if err != nil {
			return err
		}
		untrack := func() {}
		if !h.s.Keep {
			untrack = leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		}
		h.dir, h.data = d, filepath.Join(d, "data")
		// Removed by release, after the replicas are gone. A replica's
		// last write can still be landing (a process group dies a moment
		// after its leader is reaped): RemoveAll then finds the folder not
		// empty, and tries again for a while.
		h.rmDir = func() {
			if h.s.Keep {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			// Still there after that: left to the registry (the CLI
			// removes it at exit).
			if poll.Until(ctx, 100*time.Millisecond, 100*time.Millisecond, func() error { return os.RemoveAll(d) }) == nil {
				untrack()
			}
		}
		return os.Mkdir(h.data, 0o700)
	})
}

func (h *blackbox) startReplica(name string) (*replica, error) {
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
	env[coservice.EnvAckWait] = h.s.AckWait.String()
	if h.s.Broker.Kind != coservice.BrokerRedis && h.s.Broker.Kind != coservice.BrokerKafka {
		env[coservice.EnvMaxDeliver] = strconv.Itoa(h.s.MaxDeliver)
	}
	env[coservice.EnvDataDir] = h.data
	env[coservice.EnvIndexURL] = h.sinks.Base(name) + "/index"
	env[coservice.EnvNotifyURL] = h.sinks.Base(name) + "/notify"
	env[coservice.EnvWorker] = name
	env[coservice.EnvRule] = h.r.ID
	w := &replica{h: h, name: name}
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
func (w *replica) actor() string { return fmt.Sprintf("%s#%d", w.name, w.p.Run()) }

// supervise restarts the replica whenever its run ends: at once after a
// kill of the kit's; after a short back-off, and noted as the service's
// own failure, when it exited by itself.
func (w *replica) supervise() {
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
func (h *blackbox) waitPulled(w *replica, run int) {
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
func (h *blackbox) crash(w *replica, why, event string) {
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
	h.crashed()
	h.mu.Lock()
	h.kills = append(h.kills, svcKill{worker: w.name, why: why + " (" + event + ")", run: run, at: time.Now()})
	h.mu.Unlock()
}

func (h *blackbox) replicaNamed(name string) *replica {
	for _, w := range h.workers {
		if w.name == name {
			return w
		}
	}
	return nil
}

func (w *replica) current() *svcDelivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// send shapes e in the service's envelope and publishes it on the
// stream. A delivery may reach the proxy before Publish returns: the wire
// hook waits on pubMu to learn the sequence.
func (h *blackbox) send(e co.Event, brokerID string) (string, bool, error) {
	m, err := coservice.Message(coservice.Envelope(h.s.Envelope), e, brokerID)
	if err != nil {
		return "", false, fmt.Errorf("the kit cannot shape it in the service's envelope: %w", err)
	}
	h.pubMu.Lock()
	defer h.pubMu.Unlock()
	seq, dup, err := h.ch.Publish(h.ctx, m)
	if err == nil && !dup {
		h.mu.Lock()
		h.bySeq[seq] = brokerID
		h.mu.Unlock()
	}
	return fmt.Sprintf("stream sequence %d", seq), dup, err
}

// quiet: the broker reads back nothing outstanding.
// handling: a service's calls are not the kit's to see.
func (h *blackbox) handling() bool { return false }

func (h *blackbox) quiet() bool {
	n, err := h.ch.Outstanding(h.ctx)
	return err == nil && n == 0
}

// unsettled: unknown for the kit's own failures or the deadline, fail for a
// service that exited by itself or a broker that still holds messages.
func (h *blackbox) unsettled(waiting []string) {
	h.mu.Lock()
	setup := append([]string(nil), h.setupErrs...)
	h.mu.Unlock()
	errs := h.consumerErrs()
	if len(setup) > 0 {
		h.r.Unknown("the kit could not keep the service running: %s", setup[0])
	}
	if h.r.Context().Err() != nil {
		h.r.Unknown("the rule's deadline came while %s waited to be acked", strings.Join(waiting, ", "))
	}
	if len(errs) > 0 {
		h.r.Expect(errs).To(gomega.BeEmpty(), "the service exited by itself %d times and never acked %s: %s",
			len(errs), strings.Join(waiting, ", "), firstLine(errs[0]))
	}
	if len(waiting) == 0 {
		n, err := h.ch.Outstanding(h.ctx)
		if err != nil {
			h.r.Unknown("reading the consumer back from the broker: %v", err)
		}
		h.r.Expect(n).To(gomega.BeZero(), "the broker still holds %d unacked messages after %s", n, h.s.Settle)
	}
}

// stepped fails the rule when the service terminated an event: every
// event the kit publishes is well formed in the service's envelope, and a
// terminated one is never redelivered, so it is lost (a service that cannot
// find its fields, such as one reading another envelope, rejects them all).
func (h *blackbox) stepped() {
	h.mu.Lock()
	terms := append([]string(nil), h.terms...)
	h.mu.Unlock()
	h.r.Expect(terms).To(gomega.BeEmpty(), "the service terminated (+TERM) %d of the kit's events, which the broker never redelivers, so they are lost: %s; they were in the envelope %s (the service's output is in the evidence)",
		len(terms), strings.Join(terms, ", "), coservice.Describe(coservice.Envelope(h.s.Envelope)))
}

// judging: a black box has no Reconcile the kit could call; a service that
// restores effects lost to an ack-first crash must do so by itself before
// it acks anything new.
func (h *blackbox) judging() {}

func (h *blackbox) observed() ([]sinks.Effect, map[string]co.Doc) {
	return h.sinks.Effects(), h.sinks.Docs()
}

func (h *blackbox) killsAnywhere() bool { return true }

// kill kills a replica after k's delay, in the background; the step's
// settle waits for whatever it interrupted.
func (h *blackbox) kill(k *anyKill, event string) {
	w := h.workers[k.worker%len(h.workers)]
	h.mu.Lock()
	h.anyKills++
	h.mu.Unlock()
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		sleep(h.ctx, k.after)
		if h.ctx.Err() == nil {
			h.crash(w, fmt.Sprintf("a random moment, %s after the publish", k.after), event)
		}
	}()
}

func (h *blackbox) twoAtOnce() string {
	if h.s.Workers < 2 {
		return "the service runs as one replica (Service.Workers = 1): no two replicas can hold one event at once"
	}
	return ""
}

// stop ends the replicas and puts the output around every kill in the
// evidence.
func (h *blackbox) stop() {
	h.bg.Wait()
	for _, w := range h.workers {
		if w.p != nil {
			_ = w.p.Stop(0)
		}
	}
	h.sup.Wait()
	h.mu.Lock()
	kills := append([]svcKill(nil), h.kills...)
	if h.anyKills > 0 {
		h.ev.Figure("kills at random moments", h.anyKills, "included in the crashes")
	}
	h.ev.Figure("restarts", h.restarts, "same command, environment and data directory")
	h.mu.Unlock()
	// The output of the first kills, from 3 s before each to 1 s after
	// (the restart's first lines).
	const shown = 6
	for i, k := range kills {
		if i == shown {
			h.ev.Figure("kills without their output here", len(kills)-shown, "see the timeline")
			break
		}
		w := h.replicaNamed(k.worker)
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
}

// release closes the stream and the sinks and removes the data directory.
func (h *blackbox) release() {
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
