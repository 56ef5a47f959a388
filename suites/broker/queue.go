package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/checker"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/mq"
)

// BR-2.9 is Jepsen's total-queue test: a producer publishes while a group
// of members consumes, naks at random and crashes (closes without acking,
// then reconnects as a new member); a target with Disrupt injects its fault
// in the middle. The queue history goes to the total-queue checker: every
// acknowledged publish must be delivered and acked at least once, nothing
// may be delivered that was never published.
//
// The pieces: queue (what the producer and the members share), producer,
// member, disruption (the target's fault) and queueJudge (the checker's
// result turned into a verdict).

// Workload shape of BR-2.9.
const (
	queueMembers  = 3
	queueBatch    = 25
	queueNakP     = 0.10 // a delivery is nak'd
	queueCrashP   = 0.01 // a member crashes (closes without acking its batch) and reconnects
	queueMaxCrash = 12
)

// settleTimeout bounds one ack or nak of the BR-2.9 workload. An ack whose
// confirmation does not come in this time is indeterminate: after a server
// restart or a leader change the broker may drop an ack silently (nats-server
// ignores, without a reply, an ack past its restored delivery pointer), and
// waiting for it longer only stalls the member while its batch ages.
const settleTimeout = 2 * time.Second

func registerQueue(p *plan) {
	p.set.Background("BR-2.9", p.workload("BR-2.9", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, totalQueue))
}

// totalQueue is BR-2.9's workload.
func totalQueue(f *fixture) judge {
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	f.ev.Figure("seed", f.t.Seed, "")
	q := &queue{
		f: f, topic: topic, group: f.name("g"), hist: history.New(), published: make(chan struct{}),
		acked: map[string]bool{}, consumed: map[string]bool{}, fetched: map[string]bool{}, tried: map[string]bool{}, lastNew: time.Now(),
		posID: map[string]string{}, attempts: map[string]int{}, archived: map[string]bool{},
	}
	if err := q.watchArchived(); err != nil {
		return f.failed(err, "watching for records archived at the delivery limit")
	}
	fault := &disruption{f: f, topic: topic, done: make(chan error, 1)}
	f.spawn((&producer{q: q, fault: fault, n: f.w.Messages}).run)
	var members sync.WaitGroup
	for m := range queueMembers {
		mb := newMember(q, m)
		members.Add(1)
		f.spawn(func() {
			defer members.Done()
			mb.run()
		})
	}
	<-q.published
	faultErr := fault.wait()
	q.settle()
	members.Wait()
	// Cut short by its deadline, the workload never learned what became
	// of the acked publishes it had not yet consumed: indeterminate.
	q.cut = f.ctx.Err() != nil
	j := newQueueJudge(q, faultErr)
	if q.unwatch != nil {
		q.unwatch()
	}
	return j.judge
}

// queue is what BR-2.9's producer and members share.
type queue struct {
	f            *fixture
	topic, group string
	hist         *history.Recorder // the queue history: enqueue, dequeue (f.rec keeps the faults)
	published    chan struct{}     // closed when the producer is done

	mu       sync.Mutex
	acked    map[string]bool   // enqueued ok
	consumed map[string]bool   // dequeued ok
	fetched  map[string]bool   // handed to a member at least once
	posID    map[string]string // position -> id, of what was handed out
	attempts map[string]int    // id -> highest attempt handed out
	archived map[string]bool   // positions the broker archived at its delivery limit (share groups)
	unwatch  func()            // ends the watch for archived records
	tried    map[string]bool   // acked at least once, confirmed or not
	lastNew  time.Time         // the last first-time delivery, ack or consumption
	lastAsk  time.Time         // when the latest fetch the broker answered began
	quiet    time.Time         // when publishing ended and the fault healed
	lastErr  time.Time         // the latest member call the broker did not answer (an error, a timeout)
	naks     int
	crashes  int
	reopens  int  // members replaced after an error
	cut      bool // the workload ended at its deadline, not by itself
}

func (q *queue) enqueued(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.acked[id] = true
}

func (q *queue) dequeued(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.consumed[id] {
		q.lastNew = time.Now()
	}
	q.consumed[id] = true
}

// erred records a member call the broker did not answer.
func (q *queue) erred() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastErr = time.Now()
}

// trying records a first ack of id as progress: where ack replies are
// lost (the acks taking effect) each new id acked is all the progress
// there is, and the rest of each batch waits out a redelivery.
func (q *queue) trying(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.tried[id] {
		q.tried[id] = true
		q.lastNew = time.Now()
	}
}

// answered records a fetch the broker answered, begun at asked, and the
// deliveries it handed out: a first delivery of an id is progress too,
// whether or not its ack is ever confirmed.
func (q *queue) answered(asked time.Time, ds []mq.Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if asked.After(q.lastAsk) {
		q.lastAsk = asked
	}
	for _, d := range ds {
		q.posID[d.Position()] = d.Message().ID
		q.attempts[d.Message().ID] = max(q.attempts[d.Message().ID], d.Attempt())
		if id := d.Message().ID; !q.fetched[id] {
			q.fetched[id] = true
			q.lastNew = time.Now()
		}
	}
}

// count adds one to a counter of q.
func (q *queue) count(n *int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	*n++
}

// tryCrash counts a crash unless the workload had enough of them.
func (q *queue) tryCrash() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.crashes >= queueMaxCrash {
		return false
	}
	q.crashes++
	return true
}

// settle marks the moment publishing ended and the fault healed: from now
// on the members may give up when nothing new comes.
func (q *queue) settle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.quiet = time.Now()
}

// over says the members should stop: the workload ended; or publishing
// ended and every acked publish was consumed; or, after the fault healed,
// nothing new was delivered or consumed for long enough for crashed
// members' deliveries to come back (the ack wait) several times over. That
// long is the kit's own attention (package stall), not the clock's: a
// pause of the kit is no silence of the broker's. And the broker must have
// answered a fetch begun once those deliveries were due: a broker that
// could not be asked has not said there is nothing more.
func (q *queue) over() bool {
	if q.f.ctx.Err() != nil {
		return true
	}
	select {
	case <-q.published:
	default:
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	all := true
	for id := range q.acked {
		if !q.consumed[id] {
			all = false
			break
		}
	}
	if all || q.quiet.IsZero() {
		return all
	}
	// A broker that lately did not answer a member (an ack unconfirmed,
	// a consumer that could not be opened, a fetch that failed) has not
	// been silent: it was slow or away, and the deliveries may still
	// come. The silence counts from its last such failure.
	last := q.quiet
	for _, t := range []time.Time{q.lastNew, q.lastErr} {
		if t.After(last) {
			last = t
		}
	}
	due := 3 * q.f.w.AckWait
	return stall.Scheduled(last, time.Now()) > due+2*time.Second &&
		q.lastAsk.After(last) && stall.Scheduled(last, q.lastAsk) > due
}

// producer publishes n messages, each once, and starts the fault after a
// third of them were acknowledged.
type producer struct {
	q     *queue
	fault *disruption
	n     int
}

func (p *producer) run() {
	defer close(p.q.published)
	// Too few acks to reach the fault point: the fault falls now, so that
	// the rule still runs under it.
	defer p.fault.start()
	acked := 0
	for i := 0; i < p.n && p.q.f.ctx.Err() == nil; i++ {
		if p.publish(fmt.Sprintf("%s-q%04d", p.q.group, i)) {
			if acked++; acked == p.n/3 {
				p.fault.start()
			}
		}
	}
}

// publish enqueues id: ok when the broker acknowledged it, info otherwise.
func (p *producer) publish(id string) bool {
	f := p.q.f
	h := p.q.hist.Invoke("producer", checker.Enqueue, id)
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	ack, err := f.b.Publish(ctx, p.q.topic, mq.Message{ID: id, Payload: []byte(id)})
	cancel()
	if err != nil {
		h.Info(err.Error())
		p.q.erred()
		return false
	}
	h.OK(describeAck(ack))
	p.q.enqueued(id)
	return true
}

// member is one consumer of the group, replaced by a new one (a new
// connection, a new actor name) when it crashes or its connection is in
// doubt. Its random choices come from its own stream of the rule's seed.
type member struct {
	q         *queue
	m, gen    int
	actor     string
	c         mq.Consumer
	rng       *rand.Rand
	fetchErrs int // in a row
}

// newMember is member m of the group; its random choices are stream m of
// the rule's seed.
func newMember(q *queue, m int) *member {
	return &member{q: q, m: m, actor: fmt.Sprintf("member-%d.0", m),
		rng: rand.New(rand.NewPCG(uint64(q.f.t.Seed), uint64(m)))}
}

func (mb *member) run() {
	mb.c = mb.open()
	defer func() {
		if mb.c != nil {
			_ = mb.c.Close()
		}
	}()
	for mb.c != nil && !mb.q.over() {
		fctx, cancel := context.WithTimeout(mb.q.f.ctx, mb.q.f.w.AckWait+3*time.Second)
		asked := time.Now()
		ds, err := mb.c.Fetch(fctx, queueBatch, 200*time.Millisecond)
		cancel()
		if err == nil {
			mb.q.answered(asked, ds)
		}
		if err != nil {
			mb.q.erred()
			if !mb.fetchFailed(err) {
				return
			}
			continue
		}
		mb.fetchErrs = 0
		if !mb.handle(ds) {
			return
		}
	}
}

// open opens a member, retrying: while a broker recovers (a restart, an
// election) opening can fail or hang, and each try is bounded.
func (mb *member) open() mq.Consumer {
	f := mb.q.f
	for !mb.q.over() {
		ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
		c, err := f.b.Consumer(ctx, mb.q.topic, mq.ConsumerConfig{Group: mb.q.group, AckWait: f.w.AckWait})
		cancel()
		if err == nil {
			return c
		}
		f.rec.Note(mb.actor, "open", mb.q.group, "error: "+err.Error())
		mb.q.erred()
		f.pause(100 * time.Millisecond)
	}
	return nil
}

// reopen replaces the member by a new one on a new connection; false when
// none could be opened before the workload ended.
func (mb *member) reopen(action, value, why string) bool {
	f := mb.q.f
	f.rec.Note(mb.actor, action, value, why)
	_ = mb.c.Close()
	mb.gen++
	mb.actor = fmt.Sprintf("member-%d.%d", mb.m, mb.gen)
	mb.c = mb.open()
	if mb.c != nil {
		f.rec.Note(mb.actor, "reconnect", mb.q.group, "")
	}
	return mb.c != nil
}

// fetchFailed handles a failed fetch; false when the member is gone.
func (mb *member) fetchFailed(err error) bool {
	// A consumer without a leader yet (just created, or during an
	// election) answers "no responders": wait a little. Three errors in a
	// row and the member's connection is in doubt (a server went away): a
	// new member, as a restarted process would.
	if mb.fetchErrs++; mb.fetchErrs < 3 {
		mb.q.f.pause(50 * time.Millisecond)
		return true
	}
	mb.fetchErrs = 0
	mb.q.count(&mb.q.reopens)
	return mb.reopen("fetch", mb.q.group, "error: "+err.Error()+"; member reopened")
}

// handle settles one batch: each delivery is nak'd, acked, or the member
// crashes with the rest of the batch unacked. false when the member is
// gone.
func (mb *member) handle(ds []mq.Delivery) bool {
	for _, d := range ds {
		id := d.Message().ID
		x := mb.rng.Float64()
		switch {
		case x < queueCrashP && mb.q.tryCrash():
			return mb.reopen("crash", id, fmt.Sprintf("closed with %d deliveries unacked", len(ds)))
		// A broker without nak (Kafka: a commit covers every earlier
		// offset) would lose a nak'd delivery to the next ack: it gets none.
		// A share group's RELEASE is a nak without a delay.
		case x < queueCrashP+queueNakP && (mb.q.f.t.Caps.NakDelay || mb.q.f.t.Caps.ShareGroups):
			mb.q.count(&mb.q.naks)
			ctx, cancel := context.WithTimeout(mb.q.f.ctx, settleTimeout)
			_ = d.Nak(ctx, 0)
			cancel()
		default:
			if !mb.ack(d) {
				// The rest of the batch would wait out the same silence one
				// ack at a time; it is redelivered.
				mb.q.count(&mb.q.reopens)
				return mb.reopen("ack", id, "unconfirmed; the rest of the batch left to redelivery, member reopened")
			}
		}
	}
	return true
}

// ack dequeues d: ok when the broker confirmed the ack, info otherwise.
func (mb *member) ack(d mq.Delivery) bool {
	id := d.Message().ID
	mb.q.trying(id)
	h := mb.q.hist.Invoke(mb.actor, checker.Dequeue, id)
	ctx, cancel := context.WithTimeout(mb.q.f.ctx, settleTimeout)
	err := d.Ack(ctx)
	cancel()
	if err != nil {
		h.Info(err.Error())
		mb.q.erred()
		return false
	}
	h.OK(fmt.Sprintf("attempt=%d", d.Attempt()))
	mb.q.dequeued(id)
	return true
}

// disruption is the target's fault: started once, in a goroutine of the
// rule's, healed when the kit's Disrupt hook returns.
type disruption struct {
	f     *fixture
	topic string
	once  sync.Once
	done  chan error
}

func (d *disruption) start() {
	d.once.Do(func() {
		if d.f.t.Disrupt == nil {
			d.done <- nil
			return
		}
		d.f.spawn(func() { d.done <- d.f.t.Disrupt(d.f.ctx, d.f.rule, d.topic, ruleLog{d.f}) })
	})
}

// wait returns the fault's error once it healed.
func (d *disruption) wait() error {
	select {
	case err := <-d.done:
		return err
	case <-d.f.ctx.Done():
		return errors.New("the fault did not heal before the rule's budget ended")
	}
}

// queueJudge is what the total-queue checker made of the history.
type queueJudge struct {
	f        *fixture
	res      checker.Queue
	lost     []string // acked publishes never delivered
	unconf   []string // delivered, but no ack was ever confirmed
	left     int      // of lost: handed out once, left unacked by the kit (a crash, a nak), never back
	archived []string // acked publishes the broker archived at its delivery limit (share groups)
	naks     int
	crashes  int
	reopens  int
	cut      bool // the workload ended at its deadline
	faultErr error
	// After a cut: what the authoritative read-back said of lost.
	readOK  bool
	readErr error
	pending int      // still held by the broker: may yet be delivered
	gone    []string // absent from a read-back that answered: lost
}

// newQueueJudge checks q's history and writes the figures (and, for a
// loss, the smallest history) to the workload's evidence.
func newQueueJudge(q *queue, faultErr error) *queueJudge {
	ops := q.hist.Ops()
	j := &queueJudge{f: q.f, res: checker.TotalQueue(ops), faultErr: faultErr}
	q.mu.Lock()
	j.naks, j.crashes, j.reopens, j.cut = q.naks, q.crashes, q.reopens, q.cut
	fetched := q.fetched
	q.mu.Unlock()
	// The checker's lost holds every acked publish with no confirmed ack.
	// One that was delivered and whose ack went unconfirmed (the reply was
	// lost in a fault, while the ack may have taken effect and ended its
	// redelivery) reached a consumer: not lost, counted apart.
	delivered := map[string]bool{}
	for _, op := range ops {
		if op.Action == checker.Dequeue {
			delivered[op.Value] = true
		}
	}
	q.mu.Lock()
	archivedIDs := map[string]bool{}
	for pos := range q.archived {
		// Only a record handed out as often as the limit was archived
		// by it; one archived earlier is lost.
		if id, ok := q.posID[pos]; ok && q.attempts[id] >= q.f.w.MaxDeliver {
			archivedIDs[id] = true
		}
	}
	q.mu.Unlock()
	for _, id := range j.res.Lost {
		if !delivered[id] && archivedIDs[id] {
			// Archived by the broker at its delivery limit after the
			// kit's naks and crashes: accounted (BR-9.2 names the
			// hazard), not lost.
			j.archived = append(j.archived, id)
			continue
		}
		if delivered[id] {
			j.unconf = append(j.unconf, id)
		} else {
			j.lost = append(j.lost, id)
			if fetched[id] {
				j.left++
			}
		}
	}
	ev, res := q.f.ev, j.res
	ev.Figure("messages", q.f.w.Messages, "")
	ev.Figure("acked publishes", res.Acked, "")
	ev.Figure("indeterminate publishes", res.Info, "")
	ev.Figure("acked deliveries", res.Dequeued, "")
	ev.Figure("naks", j.naks, "")
	ev.Figure("crashes", j.crashes, "")
	ev.Figure("members reopened after an error", j.reopens, "")
	ev.Figure("lost (acked, never delivered)", len(j.lost), "")
	ev.Figure("lost after being handed out once and left unacked by the kit", j.left, "")
	ev.Figure("delivered, ack never confirmed", len(j.unconf), "")
	ev.Figure("unexpected", len(res.Unexpected), "")
	ev.Figure("duplicated", res.Duplicates, "")
	ev.Figure("recovered", len(res.Recovered), "")
	if q.f.t.Caps.ShareGroups {
		ev.Figure("archived at the delivery limit (accounted, not lost)", len(j.archived), "")
	}
	if j.cut && len(j.lost) > 0 {
		j.readBack(q)
	}
	if len(j.lost) > 0 || len(res.Unexpected) > 0 {
		ev.Smallest(smallest(ops, append(append([]string(nil), j.lost...), res.Unexpected...), 20))
	}
	return j
}

// readBack asks the broker, when the workload was cut off at its deadline,
// which of the acknowledged publishes not yet consumed it still holds: one
// it holds may still come (indeterminate), one a read-back that answered
// lacks is lost for certain. A read-back that fails leaves all of them
// indeterminate.
func (j *queueJudge) readBack(q *queue) {
	ctx, cancel := context.WithTimeout(context.Background(), afterWorkload(15*time.Second))
	defer cancel()
	all, err := q.f.b.ReadAll(ctx, q.topic)
	if err != nil && !errors.Is(err, mq.ErrNotFound) {
		j.readErr = err
		return
	}
	// A topic the broker says is gone holds none of them.
	held := map[string]bool{}
	for _, s := range all {
		held[s.Message.ID] = true
		held[string(s.Message.Payload)] = true
	}
	for _, id := range j.lost {
		if held[id] {
			j.pending++
		} else {
			j.gone = append(j.gone, id)
		}
	}
	j.readOK = true
	q.f.ev.Figure("not consumed at the deadline, still held by the broker", j.pending, "")
	q.f.ev.Figure("not consumed at the deadline, absent from the read-back", len(j.gone), "")
}

func (j *queueJudge) judge(r *spec.R) {
	res := j.res
	// Before the summary, which stays the reason.
	if len(j.archived) > 0 {
		r.Ev.Notef("%d acknowledged publishes were archived by the broker at its delivery limit after the kit's naks and crashes (accounted, not lost): %v", len(j.archived), j.archived)
	}
	r.Ev.Notef("total queue: %d published (%d acked, %d unknown), %d acked deliveries of %d distinct; %d naks, %d crashes, %d members reopened after an error; lost %d (and %d delivered whose ack was never confirmed), unexpected %d, duplicated %d, recovered %d",
		res.Attempted, res.Acked, res.Info, res.Dequeued, res.Distinct, j.naks, j.crashes, j.reopens, len(j.lost), len(j.unconf), len(res.Unexpected), res.Duplicates, len(res.Recovered))
	if errors.Is(j.faultErr, kithooks.ErrViolation) {
		r.Expect(j.faultErr).To(succeeded(), "the target's fault exposed a violation")
	}
	if res.Acked == 0 {
		j.f.unknown(r, "no publish was acknowledged, so there was nothing to lose")
	}
	r.Expect(res.Unexpected).To(gomega.BeEmpty(), "unexpected: delivered but never published")
	if j.cut && len(j.lost) > 0 {
		if j.readOK && len(j.gone) > 0 {
			r.Expect(j.gone).To(gomega.BeEmpty(), "lost: the workload ended at its deadline (%s) with %d of %d acknowledged publishes not yet consumed, and the broker's read-back lacks %d of them", j.f.t.Budget+workloadMargin, len(j.lost), res.Acked, len(j.gone))
		}
		why := "the broker still holds them"
		if !j.readOK {
			why = fmt.Sprintf("reading the topic back failed: %v", j.readErr)
		}
		j.f.unknown(r, "the workload ended at its deadline (%s) with %d of %d acknowledged publishes not yet consumed (%s): what becomes of them is unknown, not a loss", j.f.t.Budget+workloadMargin, len(j.lost), res.Acked, why)
	}
	r.Expect(j.lost).To(gomega.BeEmpty(), "lost: acknowledged publishes never delivered (%d of %d; %d of them handed out once, left unacked by the kit and never redelivered)", len(j.lost), res.Acked, j.left)
	if res.Duplicates > 0 {
		r.Ev.Notef("%d duplicate deliveries (at-least-once): consumers must be idempotent", res.Duplicates)
	}
	if res.Dequeued == 0 && len(j.unconf) > 0 {
		j.f.unknown(r, "every acknowledged publish was delivered, but the broker confirmed none of the %d acks the kit sent: whether they took effect is unknown", len(j.unconf))
	}
	if j.faultErr != nil {
		j.f.unknown(r, "the target's fault did not run as intended, so the run did not check what it was meant to: %v", j.faultErr)
	}
}

// watchArchived follows, on a share group (KIP-932: a record released or
// left to its lock group.share.delivery.count.limit times is archived),
// the positions the broker archives, so the judge accounts for them apart
// from the lost. Other brokers' members have no delivery limit here.
func (q *queue) watchArchived() error {
	if !q.f.t.Caps.ShareGroups {
		return nil
	}
	w, ok := q.f.b.(mq.MaxDeliverWatcher)
	if !ok {
		return nil
	}
	var ch <-chan string
	ctx, cancel := context.WithCancel(q.f.ctx)
	q.unwatch = cancel
	if err := q.f.kitStep("watch-archived", q.topic+" group="+q.group, func() (err error) {
		ch, err = w.WatchMaxDeliver(ctx, q.topic, q.group)
		return err
	}); err != nil {
		cancel()
		return err
	}
	q.f.spawn(func() {
		for pos := range ch {
			q.mu.Lock()
			q.archived[pos] = true
			q.mu.Unlock()
		}
	})
	return nil
}
