package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/mq"
)

// One judgement for every step that did not go as asked, and for every
// "did not happen within T": an operation that errored or timed out, or a
// wait that ran out, is indeterminate (unknown with its error, its
// deadline, and the kit's lateness where that explains it) unless the kit
// holds positive evidence against the target: an effect twice, an entry
// gone that the kit acked, or an answer that is impossible given what the
// kit itself did. Such evidence is kept as a proof (prove), and a rule
// holding one fails, naming it, whatever else was indeterminate: the
// judge looks at the proofs before anything else (proven), an unknown or
// an unsure error looks again, and no excuse of the kit's lateness covers
// a proven failure.
//
// The impossible answer the kit weighs today is a settle refused as "not
// pending" (mq.ErrNotPending, Redis: XACK replied 0): the kit's own
// member had the entry delivered, so it was on the group's pending list;
// only an ack (or a trim, or a deletion of the key) takes it off; the kit
// sent no ack of it before, trimmed nothing, and reads the entry back in
// the stream afterwards; nobody but the kit touches the kit's keys. The
// answer cannot be true. A refusal after an earlier settle of the same
// entry (a second member may have claimed and acked it), after a trim, or
// for an entry no longer in the stream stays indeterminate.

// provenError is a step whose answer is positive evidence against the
// target (see prove).
type provenError struct{ proof string }

func (e *provenError) Error() string { return e.proof }

// kitConsumer is a member the kit opened (fixture.consumer), knowing its
// topic. A wrapper, not a map key: an author's consumer need not be
// comparable.
type kitConsumer struct {
	mq.Consumer
	topic string
}

// delivered notes that the kit's member c had d delivered.
func (f *fixture) delivered(c mq.Consumer, d mq.Delivery) {
	kc, ok := c.(*kitConsumer)
	if !ok {
		return
	}
	topic := kc.topic
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onTopics == nil {
		f.onTopics = map[string][]string{}
	}
	for _, t := range f.onTopics[d.Position()] {
		if t == topic {
			return
		}
	}
	f.onTopics[d.Position()] = append(f.onTopics[d.Position()], topic)
}

// settling notes a settle of d about to go out, and says whether the kit
// had sent one for the same position before.
func (f *fixture) settling(d mq.Delivery) (earlier bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settledAt == nil {
		f.settledAt = map[string]bool{}
	}
	earlier = f.settledAt[d.Position()]
	f.settledAt[d.Position()] = true
	return earlier
}

// acking notes an ack of d about to go out: a read of the group's progress
// that comes after it may show the kit's own ack.
func (f *fixture) acking(d mq.Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ackedAt == nil {
		f.ackedAt = map[string]bool{}
	}
	f.ackedAt[d.Position()] = true
}

// ackedByKit says whether the kit sent an ack for position pos by now.
func (f *fixture) ackedByKit(pos string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ackedAt[pos]
}

// cut notes that the kit trimmed one of its topics: from then on an entry
// may have left a pending list without an ack.
func (f *fixture) cut() {
	f.mu.Lock()
	f.trimmed = true
	f.mu.Unlock()
}

// refusal weighs a settle the target refused as not pending: the proof
// when, given what the kit did, the answer is impossible, else "".
func (f *fixture) refusal(action string, d mq.Delivery, earlier bool, err error) string {
	f.mu.Lock()
	topics, trimmed := f.onTopics[d.Position()], f.trimmed
	f.mu.Unlock()
	if earlier || trimmed || len(topics) != 1 || f.b == nil {
		return ""
	}
	topic := topics[0]
	h := f.rec.Invoke("checker", "read-all", topic)
	all, rerr := f.b.ReadAll(f.ctx, topic)
	if rerr != nil {
		h.Info(rerr.Error())
		return ""
	}
	stored := false
	for _, s := range all {
		if s.Position == d.Position() {
			stored = true
			break
		}
	}
	h.OK(fmt.Sprintf("%d stored, entry %s stored: %v", len(all), d.Position(), stored))
	if !stored {
		return ""
	}
	return fmt.Sprintf("the %s of entry %s (id %s) was answered \"not pending\" (%s), an answer impossible given what the kit itself did: its own member had the entry delivered, which put it on the group's pending list; the kit sent no ack or other settle of it before, trimmed nothing, and read the entry back in the stream after the answer; nobody but the kit touches the kit's keys",
		action, d.Position(), d.Message().ID, oneLine(err.Error()))
}

// prove keeps positive evidence against the target, and puts the step on
// the rule's timeline as the smallest history that shows it.
func (f *fixture) prove(actor, action, value, proof string) {
	f.mu.Lock()
	f.proofs = append(f.proofs, proof)
	f.mu.Unlock()
	f.rec.Note(actor, action+" answer impossible", value, proof)
	f.ev.Smallest(smallest(f.rec.Ops(), []string{value}, 1))
}

// hasProof says whether the rule holds positive evidence against the target.
func (f *fixture) hasProof() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.proofs) > 0
}

// proven fails the rule on the positive evidence it holds, if any; it
// returns when there is none.
func (f *fixture) proven(r *spec.R) {
	f.mu.Lock()
	ps := append([]string(nil), f.proofs...)
	f.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	for _, p := range ps[1:] {
		r.Ev.Notef("further positive evidence: %s", p)
	}
	r.Expect(len(ps)).To(noProof{}, "%s", ps[0])
}

// noProof matches no proofs held; its failure message is the proof alone
// (the description), with nothing of Gomega's layout.
type noProof struct{}

func (noProof) Match(actual any) (bool, error)   { n, _ := actual.(int); return n == 0, nil }
func (noProof) FailureMessage(any) string        { return "" }
func (noProof) NegatedFailureMessage(any) string { return "" }

// committedPast looks whether the group already holds d, which the kit
// never acked, as settled: on a broker that tells (mq.AckedInspector,
// NATS: the ack floor) that d is acknowledged, or on one whose group keeps
// a committed position (mq.GroupOffsets, Kafka) that it lies past d. An
// ack or commit the kit never made, so d will not come back to the group
// (a client that acks or commits as it hands a message out, or when a
// member leaves). That is positive evidence, kept as a proof; an answer
// the kit cannot read or compare proves nothing.
func (f *fixture) committedPast(topic, group string, d mq.Delivery) {
	f.mu.Lock()
	acked := f.settledAt[d.Position()]
	f.mu.Unlock()
	if acked || f.hasProof() {
		return
	}
	if _, ok := f.b.(mq.AckedInspector); ok {
		f.heldAcked(topic, group, d, "which its member had delivered and never acked before it crashed: an ack the kit never sent, so the delivery cannot come back to another member")
		return
	}
	offsets, ok := f.b.(mq.GroupOffsets)
	if !ok {
		return
	}
	h := f.rec.Invoke("checker", "committed offset", group)
	pos, err := offsets.Committed(f.ctx, topic, group)
	if err != nil {
		h.Info(err.Error())
		return
	}
	h.OK(orNone(pos))
	// Read after the read: a member of the kit's (a watch for the
	// redelivery) may have acked the position while the offset was read.
	if !positionPast(pos, d.Position()) || f.ackedByKit(d.Position()) {
		return
	}
	f.prove("checker", "committed offset", "id="+d.Message().ID, fmt.Sprintf("the group's committed position is %s, past %s (id %s), which its member had delivered and never acked before it crashed: a commit the kit never made, so the delivery cannot come back to another member", pos, d.Position(), d.Message().ID))
}

// positionPast says whether next (a committed position: the next to read)
// lies past pos on the same partition; positions are "partition/offset"
// (Kafka). Anything else is not comparable: false.
func positionPast(next, pos string) bool {
	np, no, ok1 := splitPosition(next)
	pp, po, ok2 := splitPosition(pos)
	return ok1 && ok2 && np == pp && no > po
}

func splitPosition(s string) (string, int64, bool) {
	p, o, ok := strings.Cut(s, "/")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.ParseInt(o, 10, 64)
	return p, n, err == nil
}

// missed is the judgement of a deadline the target missed: something that
// had to happen (a redelivery, a claim) did not within T. The miss alone is
// no evidence (the kit's process, or a server on the same loaded host, may
// have been late; the kit's own lateness is named where it was measured):
// the rule fails only on a proof the kit holds, else it is unknown.
func (f *fixture) missed(r *spec.R, format string, args ...any) {
	f.proven(r)
	what := fmt.Sprintf(format, args...)
	late := stall.Since(f.started)
	if late.Paused() || late.Lag >= stall.Floor {
		f.unknown(r, "%s; a deadline missed is not evidence against the target without more (%s)", what, late)
	}
	f.unknown(r, "%s; a deadline missed is not evidence against the target without more (the kit was scheduled throughout; a server on the same loaded host may have been late)", what)
}

// heldAcked looks, on a broker that tells (mq.AckedInspector), whether
// the group holds d as acknowledged although the kit never acked it (it
// nak'd it, say, or its member crashed holding it): an ack the kit never
// sent, kept as a proof; why says what the kit did with d instead.
func (f *fixture) heldAcked(topic, group string, d mq.Delivery, why string) {
	yes, ok := f.askAcked(topic, group, d)
	// The kit's own ack, sent while the group was read, explains a yes.
	if ok && yes && !f.ackedByKit(d.Position()) {
		f.prove("checker", "acked?", "id="+d.Message().ID, fmt.Sprintf("the group holds %s (id %s) as acknowledged, %s", d.Position(), d.Message().ID, why))
	}
}

// askAcked asks a broker that tells (mq.AckedInspector) whether the group
// holds d as acknowledged; ok is false when it cannot tell, or a proof is
// already held.
func (f *fixture) askAcked(topic, group string, d mq.Delivery) (yes, ok bool) {
	a, can := f.b.(mq.AckedInspector)
	if !can || f.hasProof() {
		return false, false
	}
	h := f.rec.Invoke("checker", "acked?", fmt.Sprintf("group %s pos=%s", group, d.Position()))
	yes, err := a.Acked(f.ctx, topic, group, d.Position())
	if err != nil {
		h.Info(err.Error())
		return false, false
	}
	h.OK(fmt.Sprint(yes))
	return yes, true
}

// ackNotHeld looks, on a broker that tells (mq.AckedInspector), whether
// the group still holds d as unacknowledged after an ack the adapter
// reported confirmed and the wait the rule gave it: the broker never took
// the ack its adapter said it confirmed (a confirmed ack moves the group's
// ack floor before it is answered; a slow removal does not explain it).
func (f *fixture) ackNotHeld(topic, group string, d mq.Delivery) {
	if yes, ok := f.askAcked(topic, group, d); ok && !yes {
		f.prove("checker", "acked?", "id="+d.Message().ID, fmt.Sprintf("the group does not hold %s (id %s) as acknowledged, though its ack was reported confirmed: the broker never took that ack", d.Position(), d.Message().ID))
	}
}

// receive waits for a value on ch for d of the kit's scheduled time.
func (f *fixture) receive(ch <-chan string, d time.Duration) (string, bool) {
	start := time.Now()
	for {
		left := d - stall.Scheduled(start, time.Now())
		if left <= 0 {
			select {
			case v, ok := <-ch:
				return v, ok
			default:
				return "", false
			}
		}
		t := time.NewTimer(min(left, 100*time.Millisecond))
		select {
		case v, ok := <-ch:
			t.Stop()
			return v, ok
		case <-f.ctx.Done():
			t.Stop()
			return "", false
		case <-t.C:
		}
	}
}

// deadLetteredEarly looks, on a broker whose dead letters the kit can read
// (mq.DeadLetterReader), whether message id was dead-lettered after n
// deliveries, fewer than max-deliver, although the kit only nak'd it (asked
// to see it again): the broker gave it up early, kept as a proof.
func (f *fixture) deadLetteredEarly(topic, group, id string, n, max int) {
	dr, ok := f.b.(mq.DeadLetterReader)
	if !ok || f.hasProof() {
		return
	}
	// Dead-lettering is routed after the nak: on a loaded host it may land
	// a moment after the redelivery was awaited, so the queue is read for
	// up to two seconds of the kit's scheduled time.
	start := time.Now()
	for {
		h := f.rec.Invoke("checker", "dead-letters", topic+" group="+group)
		dls, err := dr.DeadLetters(f.ctx, topic, group)
		if err != nil {
			h.Info(err.Error())
			return
		}
		h.OK(fmt.Sprintf("%d dead-lettered", len(dls)))
		for _, d := range dls {
			if d.Message.ID == id {
				f.provedEarly(id, d.Reason, n, max)
				return
			}
		}
		if stall.Scheduled(start, time.Now()) >= 2*time.Second || f.ctx.Err() != nil {
			return
		}
		f.pause(100 * time.Millisecond)
	}
}

// provedEarly keeps as a proof that message id was dead-lettered (for
// reason) after n deliveries, fewer than max-deliver, although the kit only
// nak'd it.
func (f *fixture) provedEarly(id, reason string, n, max int) {
	f.prove("checker", "dead-letters", "id="+id, fmt.Sprintf("message %s was dead-lettered (reason %q) after %d deliveries, fewer than max-deliver %d, although the kit only nak'd each delivery, asking to see it again: the broker gave up on a message it had to redeliver",
		id, reason, n, max))
}

// noDeadLetterQueue looks, on a broker whose dead letters the kit can read,
// whether the topic has a dead-letter queue at all: without one nothing the
// group gives up on can be dead-lettered or signalled, so what reaches
// max-deliver is dropped unseen (an exchange named but never declared).
func (f *fixture) noDeadLetterQueue(topic, group string) {
	dr, ok := f.b.(mq.DeadLetterReader)
	if !ok || f.hasProof() {
		return
	}
	h := f.rec.Invoke("checker", "dead-letters", topic+" group="+group)
	_, err := dr.DeadLetters(f.ctx, topic, group)
	if !errors.Is(err, mq.ErrNotFound) {
		if err != nil {
			h.Info(err.Error())
		} else {
			h.OK("the dead-letter queue exists")
		}
		return
	}
	h.OK("not found: " + err.Error())
	f.prove("checker", "dead-letters", "topic="+topic, fmt.Sprintf("the topic the kit created through the adapter has no dead-letter queue (%s): a message that reaches max-deliver cannot be dead-lettered or signalled, it is dropped", oneLine(err.Error())))
}

// retentionHeld reads, where the target can be inspected, the retention the
// server holds topic with: another than want, with which the kit created it
// through the client under test, is kept as a proof (a client that creates
// every topic with limits retention).
func (f *fixture) retentionHeld(topic string, want mq.Retention) {
	if f.t.Inspect == nil || f.hasProof() {
		return
	}
	h := f.rec.Invoke("checker", "topic info", topic)
	in, err := f.t.Inspect(f.ctx)
	if err != nil {
		h.Info(err.Error())
		return
	}
	defer in.Close()
	ti, err := in.Topic(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return
	}
	got := ti.Config.Retention
	h.OK("retention " + string(got))
	if got != "" && got != want {
		f.prove("checker", "topic info", "topic="+topic, fmt.Sprintf("the server holds topic %s with %s retention, although the kit created it with %s retention through the client under test", topic, got, want))
	}
}
