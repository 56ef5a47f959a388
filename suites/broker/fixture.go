package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// fixture is one rule's workload: its broker handle, its own topics, its
// timeline, the evidence it gathers before the spec judges it, and every
// goroutine it started. It lives until the rule's spec ends (or the set
// finishes), so a judge may still read the broker and wait on a watch.
type fixture struct {
	ctx    context.Context // derived from the suite's; cancelled by stop
	cancel context.CancelFunc
	t      target
	w      kithooks.Windows
	rule   string
	b      mq.Broker
	rec    *history.Recorder
	ev     *verdict.Evidence // merged into the spec's evidence before the judge runs

	wg       sync.WaitGroup
	mu       sync.Mutex
	cleanups []func()
	panicked any // the first panic of a goroutine spawned after the workload
	started  time.Time
	lastEnd  time.Time // when the last of its goroutines ended
	stopped  sync.Once
	merged   sync.Once
	// unreadable are the declared settings the server would not tell
	// (BR-6.1: named, and unknown, never passed).
	unreadable []string
	// undecided are what BR-6.1 read but cannot judge either way (a Redis
	// group with no read counter): each makes it unknown, named.
	undecided []string

	// unwatch releases the kit's heartbeat (package stall), held from the
	// workload's start to its end so every pause during it is known.
	unwatch func()
	// need is the pause that would explain the failure the judge is about
	// to report (0: see scale); judge goroutine only.
	need time.Duration
	// span, when set, is the interval the judge measured (from, to): a
	// failure by need is then explained by the kit's pauses inside it
	// adding up to need, not only by one pause that long. Under CPU
	// starvation the kit loses its time in many short pauses, and on a
	// broker whose redelivery the kit's own client drives (Redis claims)
	// each of them delays what it measures.
	span    [2]time.Time
	untimed bool // see notTimed

	// What the kit itself did, against which a definite answer of the
	// target's is weighed (see proof.go); under mu.
	onTopics  map[string][]string // a delivery's position: the topics it was delivered on
	settledAt map[string]bool     // positions the kit sent an ack or another settle for
	ackedAt   map[string]bool     // positions the kit sent an ack for (noted before it goes out)
	trimmed   bool                // the kit cut one of its topics (BR-4.3)
	proofs    []string            // positive evidence against the target (see prove)
}

func newFixture(ctx context.Context, cancel context.CancelFunc, t target, rule string) *fixture {
	return &fixture{ctx: ctx, cancel: cancel, t: t, w: t.Windows, rule: rule, rec: history.New(), ev: &verdict.Evidence{}, started: time.Now(), unwatch: stall.Hold()}
}

// stallAware gives the judge the rule's excuse: a failure that a pause of
// the kit's own process during the rule could explain is unknown, naming
// the pause, and the pause is a hazard of the kit's set-up.
func (f *fixture) stallAware(j judge) judge {
	return func(r *spec.R) {
		// Positive evidence first: no lateness of the kit's excuses it.
		f.proven(r)
		r.Excuse(func(failure string) string {
			if f.hasProof() {
				return ""
			}
			if f.need > 0 {
				if p, ok := f.paused(r, f.need); ok {
					return fmt.Sprintf("%s, enough to account for the %s by which the measurement missed: the delay may be the kit's own, not the target's: %s", p, f.need.Round(time.Millisecond), failure)
				}
				return ""
			}
			if f.untimed {
				return ""
			}
			if p, ok := f.paused(r, f.scale()); ok {
				return fmt.Sprintf("%s, as long as the rule's shortest wait (%s) or longer: the failure may come from the kit's own delay, not the target's: %s", p, f.scale(), failure)
			}
			return ""
		})
		j(r)
		// A proof a watch found while the judge waited.
		f.proven(r)
	}
}

// scale is the shortest pause of the kit that could explain a failure not
// timed against a tolerance (a late ack let the broker redeliver, a late
// retry fell outside the window): the rule's shortest wait (the ack wait,
// the de-dupe window), never below the tolerance. A host merely busy
// delays the kit by less (a few hundred ms at a load of 8 per core); a
// stopped or stalled one by more.
func (f *fixture) scale() time.Duration {
	d := f.w.AckWait
	if w := applied(f.w, f.t.Caps); w > 0 && w < d {
		d = w
	}
	return max(f.w.Tolerance, d)
}

// notTimed says the rule's outcome does not hang on the kit's timing, or
// that its workload measured the timing that matters itself (BR-1.7: when
// the retry came): no failure of it is put down to a pause.
func (f *fixture) notTimed() { f.untimed = true }

// paused names the longest pause of the kit's own process since the rule
// started when it lasted at least need, and records it as a hazard of the
// kit's set-up.
func (f *fixture) paused(r *spec.R, need time.Duration) (string, bool) {
	s := stall.Since(f.started)
	explains := s.Paused() && s.Longest.Len >= need
	if !f.span[0].IsZero() {
		// Inside a measured span the kit's lateness counts whole: pauses,
		// and on an overloaded host the wake-ups each a little late (Lag),
		// which delay the kit's polls as much.
		if in := stall.Over(f.span[0], f.span[1]); in.Total >= need || in.Lag >= need {
			s, explains = in, true
		}
	}
	if !explains {
		return "", false
	}
	r.Ev.Figure("longest pause of the kit", s.Longest.Len.Seconds(), "s")
	r.Ev.Figure("the kit's lateness in the measurement", s.Lag.Seconds(), "s")
	r.Ev.SetupHazard("the kit's own process was not scheduled for %s in all (the longest pause %s) while %s timed the target (the process was stopped, or its host stalled or was overloaded): the timing measured was the kit's, not the target's; run it again on a host that is not paused", seconds(max(s.Total, s.Lag)), seconds(s.Longest.Len), f.rule)
	return s.String(), true
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// atLeast expects got >= lo. Should it fail, a pause of the kit at least
// as long as the shortfall explains it (see stallAware).
func (f *fixture) atLeast(r *spec.R, got, lo time.Duration, format string, args ...any) {
	f.need = lo - got
	r.Expect(got).To(gomega.BeNumerically(">=", lo), append([]any{format}, args...)...)
	f.need = 0
}

// atMost expects got <= hi; a pause at least as long as the excess
// explains a failure.
func (f *fixture) atMost(r *spec.R, got, hi time.Duration, format string, args ...any) {
	f.need = got - hi
	r.Expect(got).To(gomega.BeNumerically("<=", hi), append([]any{format}, args...)...)
	f.need = 0
}

// open opens the rule's handle on the broker: the kit's set-up.
func (f *fixture) open() error {
	return f.kitStep("open-broker", "", func() error {
		b, err := f.t.Open(f.ctx)
		if err != nil {
			return err
		}
		f.b = b
		f.defer_(func() { _ = b.Close() })
		return nil
	})
}

// spawn runs fn in a goroutine that stop waits for. A panic in fn (the
// target's code) is kept and raised again in the spec.
func (f *fixture) spawn(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() {
			p := recover()
			f.mu.Lock()
			defer f.mu.Unlock()
			if p != nil && f.panicked == nil {
				f.panicked = p
			}
			f.lastEnd = time.Now()
		}()
		fn()
	}()
}

// repanic raises in the spec a panic a spawned goroutine caught.
func (f *fixture) repanic() {
	f.mu.Lock()
	p := f.panicked
	f.mu.Unlock()
	if p != nil {
		panic(p)
	}
}

// defer_ registers a cleanup, run last-in first-out when the fixture stops.
func (f *fixture) defer_(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}

// stop cancels the workload, waits for every goroutine it started, then
// releases what it created. It runs once; later calls wait for the first.
func (f *fixture) stop() {
	f.stopped.Do(func() {
		f.cancel()
		f.wg.Wait()
		f.mu.Lock()
		cs := f.cleanups
		f.cleanups = nil
		f.mu.Unlock()
		for i := len(cs) - 1; i >= 0; i-- {
			cs[i]()
		}
		f.unwatch()
	})
}

// end is the rule's cleanup: stop, then hand over the evidence and the
// timeline. The workloads start before their rules run, so a rule's own
// run time can be near zero; "rule wall time" is the workload's
// own, from its start to the end of the last goroutine it started.
func (f *fixture) end(ev *verdict.Evidence) {
	f.stop()
	f.merge(ev)
	f.mu.Lock()
	wall := f.lastEnd.Sub(f.started)
	f.mu.Unlock()
	ev.Figure("rule wall time", wall.Seconds(), "s")
	if s := stall.Over(f.started, f.lastEnd); s.Paused() {
		ev.Figure("longest pause of the kit", s.Longest.Len.Seconds(), "s")
	}
	if ops := f.rec.Ops(); len(ops) > 0 {
		ev.Record(ops)
	}
}

// merge copies the workload's figures, notes, hazards and smallest history
// into the spec's evidence, once.
func (f *fixture) merge(ev *verdict.Evidence) {
	f.merged.Do(func() {
		s := f.ev.Snapshot()
		for _, fig := range s.Figures {
			ev.Figure(fig.Name, fig.Value, fig.Unit)
		}
		for _, n := range s.Notes {
			ev.Notef("%s", n)
		}
		for _, h := range s.Hazards {
			ev.Hazard("%s", h)
		}
		for _, h := range s.SetupHazards {
			ev.SetupHazard("%s", h)
		}
		for _, c := range s.Comparisons {
			ev.Compare(c)
		}
		if len(s.Minimal) > 0 {
			ev.Smallest(s.Minimal)
		}
	})
}

// left is what remains of the workload's budget: the bound of a judge's
// wait on something the workload left running.
func (f *fixture) left() time.Duration {
	if dl, ok := f.ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return time.Millisecond
}

// pause waits d, or less if the workload ends.
func (f *fixture) pause(d time.Duration) {
	select {
	case <-time.After(d):
	case <-f.ctx.Done():
	}
}

// sleepUntil waits for t (or the end of the workload).
func (f *fixture) sleepUntil(t time.Time) { f.pause(time.Until(t)) }

func nonce() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// name is unique to the rule, the label and this run.
func (f *fixture) name(label string) string {
	return strings.ReplaceAll(strings.ToLower(f.rule), ".", "_") + "-" + label + "-" + nonce()
}

// topicOn creates a topic of the rule's own on b and deletes it afterwards.
func (f *fixture) topicOn(b mq.Broker, label string, cfg mq.TopicConfig) (string, error) {
	name := f.name(label)
	if cfg.Storage == "" {
		cfg.Storage = f.w.Storage
	}
	if cfg.MaxAge == 0 && !ageTooShort(f.t.Windows, f.t.Budget) {
		cfg.MaxAge = f.w.MaxAge
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = f.w.Replicas
	}
	if err := f.kitStep("create-topic", fmt.Sprintf("%s %s window=%s", name, cfg.Retention, cfg.DedupeWindow), func() error {
		return b.CreateTopic(f.ctx, name, cfg)
	}); err != nil {
		return "", err
	}
	f.defer_(func() {
		// The workload's context is over by now; the deletion has its own.
		ctx, cancel := context.WithTimeout(context.Background(), afterWorkload(5*time.Second))
		defer cancel()
		_ = b.DeleteTopic(ctx, name)
	})
	return name, nil
}

func (f *fixture) topic(label string, cfg mq.TopicConfig) (string, error) {
	return f.topicOn(f.b, label, cfg)
}

// publishOn publishes and records the operation: ok with the position (and
// "duplicate" when the broker says so), info when the outcome is unknown.
func (f *fixture) publishOn(ctx context.Context, b mq.Broker, actor, topic string, m mq.Message) (mq.PublishAck, error) {
	h := f.rec.Invoke(actor, "publish", fmt.Sprintf("%s id=%s %q", topic, m.ID, m.Payload))
	ack, err := b.Publish(ctx, topic, m)
	if err != nil {
		h.Info(err.Error())
		return ack, unsure("publishing id="+m.ID, err)
	}
	h.OK(describeAck(ack))
	return ack, nil
}

func (f *fixture) publish(actor, topic string, m mq.Message) (mq.PublishAck, error) {
	return f.publishOn(f.ctx, f.b, actor, topic, m)
}

func describeAck(a mq.PublishAck) string {
	if a.Duplicate {
		return "pos=" + a.Position + " duplicate"
	}
	return "pos=" + a.Position + " stored"
}

// copies counts the stored messages with id, and returns their payloads.
func (f *fixture) copies(topic, id string) (int, []string, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := f.b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return 0, nil, unsure("reading the topic back", err)
	}
	var payloads []string
	for _, s := range all {
		if s.Message.ID == id {
			payloads = append(payloads, string(s.Message.Payload))
		}
	}
	h.OK(fmt.Sprintf("%d stored, %d with id %s", len(all), len(payloads), id))
	return len(payloads), payloads, nil
}

// afterWorkload bounds a call the kit makes once a workload's context is
// over (a read-back, a topic's deletion): d, or half a second when the run
// was interrupted, since it is removing the servers it started and such a
// call would wait out d for no answer; one on a broker the kit did not
// start gets that moment, so the run still ends within seconds.
func afterWorkload(d time.Duration) time.Duration {
	if leftovers.Closing() {
		return 500 * time.Millisecond
	}
	return d
}

// payloads reads topic back once and counts the stored copies of each
// payload.
func (f *fixture) payloads(topic string) (map[string]int, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := f.b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return nil, unsure("reading the topic back", err)
	}
	n := map[string]int{}
	for _, s := range all {
		n[string(s.Message.Payload)]++
	}
	h.OK(fmt.Sprintf("%d stored", len(all)))
	return n, nil
}

// intentsOn counts the stored copies of one intent, known by its payload:
// a producer that changes the id on a retry stores copies under other ids,
// and they are copies all the same.
func (f *fixture) intentsOn(b mq.Broker, topic, payload string) (int, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return 0, unsure("reading the topic back", err)
	}
	n := 0
	for _, s := range all {
		if string(s.Message.Payload) == payload {
			n++
		}
	}
	h.OK(fmt.Sprintf("%d stored, %d of intent %q", len(all), n, payload))
	return n, nil
}

func (f *fixture) intents(topic, payload string) (int, error) {
	return f.intentsOn(f.b, topic, payload)
}

// consumer opens a member of group on topic.
func (f *fixture) consumer(topic, group string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	cfg.Group = group
	var c mq.Consumer
	if err := f.kitStep("open-consumer", fmt.Sprintf("%s group=%s ackWait=%s maxDeliver=%d", topic, group, cfg.AckWait, cfg.MaxDeliver), func() (err error) {
		c, err = f.b.Consumer(f.ctx, topic, cfg)
		return err
	}); err != nil {
		return nil, err
	}
	f.defer_(func() { _ = c.Close() })
	return &kitConsumer{Consumer: c, topic: topic}, nil
}

// delivered is one delivery and the moment the kit had it.
type delivered struct {
	d  mq.Delivery
	at time.Time
}

// next fetches until one delivery arrives or until deadline; nil when none.
// The wait is the kit's own attention, not the clock's: time the kit was
// not scheduled (package stall) is added, so a paused kit still gives the
// target the whole wait. A wait whose last fetch failed ends with that
// error (the kit could not ask), not with "nothing came".
func (f *fixture) next(actor string, c mq.Consumer, deadline time.Time) (*delivered, error) {
	start, wait := time.Now(), time.Until(deadline)
	var lastErr error
	for {
		left := wait - stall.Scheduled(start, time.Now())
		if left <= 0 {
			return nil, unsure("fetching", lastErr)
		}
		if left > time.Second {
			left = time.Second
		}
		ds, err := c.Fetch(f.ctx, 1, left)
		if err != nil {
			if f.ctx.Err() != nil {
				return nil, unsure("fetching", err)
			}
			lastErr = err
			f.rec.Note(actor, "fetch", "", "error: "+err.Error())
			f.pause(10 * time.Millisecond)
			continue
		}
		lastErr = nil
		if len(ds) > 0 {
			d := ds[0]
			at := time.Now()
			f.delivered(c, d)
			f.rec.Note(actor, "deliver", "id="+d.Message().ID, fmt.Sprintf("attempt=%d pos=%s", d.Attempt(), d.Position()))
			return &delivered{d: d, at: at}, nil
		}
	}
}

// settle records one of ack, nak, term, in-progress. An error is the
// indeterminate outcome of the settle, unless the target answered that it
// held no such delivery where, given what the kit itself did, that answer
// is impossible (see refusal): then it is positive evidence against the
// target.
func (f *fixture) settle(actor, action string, d mq.Delivery, do func(context.Context) error) error {
	h := f.rec.Invoke(actor, action, "id="+d.Message().ID)
	earlier := f.settling(d)
	if action == "ack" {
		f.acking(d)
	}
	err := do(f.ctx)
	if err == nil {
		h.OK("")
		return nil
	}
	if errors.Is(err, mq.ErrNotPending) {
		if proof := f.refusal(action, d, earlier, err); proof != "" {
			h.Fail(oneLine(err.Error()))
			f.prove(actor, action, "id="+d.Message().ID, proof)
			return &provenError{proof: proof}
		}
	}
	h.Info(err.Error())
	return unsure(action, err)
}

// watch is a background fetch for deliveries that come back, started by a
// workload and read by its judge: the spec waits on it with r.Eventually
// ("it comes back") or r.Consistently ("it never comes back").
type watch struct {
	byPayload bool
	chs       map[string]chan *delivered

	mu  sync.Mutex
	err error
}

// watch fetches from c in the background until deadline, or until a
// delivery came for each key. With keys, a delivery's key is its payload;
// without, any delivery counts. Each delivery is acked, so it does not come
// back again, and the first per key is sent on that key's channel; every
// channel closes when the watch ends, so a judge's wait ends with it.
func (f *fixture) watch(actor string, c mq.Consumer, deadline time.Time, keys ...string) *watch {
	w := &watch{byPayload: len(keys) > 0, chs: map[string]chan *delivered{}}
	if len(keys) == 0 {
		keys = []string{""}
	}
	for _, k := range keys {
		w.chs[k] = make(chan *delivered, 1)
	}
	f.spawn(func() {
		defer func() {
			for _, ch := range w.chs {
				close(ch)
			}
		}()
		sent := map[string]bool{}
		for len(sent) < len(w.chs) {
			d, err := f.next(actor, c, deadline)
			if err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			if d == nil {
				return
			}
			_ = f.settle(actor, "ack", d.d, d.d.Ack)
			key := ""
			if w.byPayload {
				key = string(d.d.Message().Payload)
			}
			if ch, ok := w.chs[key]; ok && !sent[key] {
				sent[key] = true
				ch <- d
			}
		}
	})
	return w
}

// back is the channel of the deliveries with key ("" without keys).
func (w *watch) back(key string) <-chan *delivered { return w.chs[key] }

// Err is why the watch ended early, if it did.
func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// ruleLog is the Log a target's fault writes to: the rule's timeline and
// its evidence.
type ruleLog struct{ f *fixture }

func (l ruleLog) Step(actor, action, key string, err error) {
	h := l.f.rec.Invoke(actor, action, key)
	if err != nil {
		h.Fail(err.Error())
		return
	}
	h.OK("")
}

func (l ruleLog) Note(actor, action, key, result string) { l.f.rec.Note(actor, action, key, result) }

func (l ruleLog) Figure(name string, value any, unit string) { l.f.ev.Figure(name, value, unit) }

func (l ruleLog) Notef(format string, args ...any) { l.f.ev.Notef(format, args...) }

// smallest is a rule's smallest failing history: the operations on the
// first max of the values that show the failure, in history order.
func smallest(ops []history.Op, values []string, max int) []history.Op {
	if len(values) > max {
		values = values[:max]
	}
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
	}
	var out []history.Op
	for _, op := range ops {
		if want[op.Value] {
			out = append(out, op)
		}
	}
	return out
}

// ctxT keeps the settle closures of the delivery rules on one line.
type ctxT = context.Context
