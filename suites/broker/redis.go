package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// The BR-4 rules check what a broker with a per-group pending list (Redis
// Streams) does with it: the ack empties the pending list and deletes
// nothing (BR-4.1), the ack wait is the min-idle-time of a claim by another
// member that raises the delivery counter (BR-4.2), and a trim cuts entries
// still pending (BR-4.3, a hazard, measured). The kit reads the list
// through mq.PendingInspector and cuts through mq.Trimmer; a target that
// declares the capability without the interface fails: it says what it
// does not do.

func registerRedis(p *plan) {
	p.set.Background("BR-4.1", p.workload("BR-4.1", func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }, ackLeavesEntry))
	p.set.Background("BR-4.2", p.workload("BR-4.2", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait + w.Tolerance }, idleClaim))
	p.set.Background("BR-4.3", p.workload("BR-4.3", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait + w.Tolerance }, trimDropsPending))
}

// pendingOf reads group's pending list on topic and records the read.
func (f *fixture) pendingOf(insp mq.PendingInspector, topic, group string) ([]mq.Pending, error) {
	h := f.rec.Invoke("checker", "pending-list", topic+" group="+group)
	ps, err := insp.Pending(f.ctx, topic, group)
	if err != nil {
		h.Info(err.Error())
		return nil, unsure("reading the pending list", err)
	}
	h.OK(describePending(ps))
	return ps, nil
}

func describePending(ps []mq.Pending) string {
	if len(ps) == 0 {
		return "empty"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pending:", len(ps))
	for i, p := range ps {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(ps)-5)
			break
		}
		fmt.Fprintf(&b, " %s(member=%s deliveries=%d)", p.Position, p.Member, p.Deliveries)
	}
	return b.String()
}

func findPending(ps []mq.Pending, pos string) (mq.Pending, bool) {
	for _, p := range ps {
		if p.Position == pos {
			return p, true
		}
	}
	return mq.Pending{}, false
}

// inspector is the handle's pending-list reader, or a judge failing the
// rule: the target declares a pending list its handle does not expose.
func (f *fixture) inspector() (mq.PendingInspector, judge) {
	insp, ok := f.b.(mq.PendingInspector)
	if ok {
		return insp, nil
	}
	return nil, func(r *spec.R) {
		r.Expect(ok).To(gomega.BeTrue(), "the target declares a pending list (pendingList) but its handle (%T) has no Pending method (mq.PendingInspector)", f.b)
	}
}

// ackLeavesEntry is BR-4.1: one delivery, the pending list read before and
// after its ack, the stream after it.
func ackLeavesEntry(f *fixture) judge {
	insp, fail := f.inspector()
	if fail != nil {
		return fail
	}
	aw := f.w.AckWait
	id := f.name("m")
	topic, group, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
	if err != nil {
		return f.failed(err, "setting up")
	}
	d, err := f.next("member-1", c, time.Now().Add(aw))
	if err != nil || d == nil {
		return f.failed(noDelivery("no first delivery", err), "first delivery")
	}
	before, errBefore := f.pendingOf(insp, topic, group)
	ackErr := f.settle("member-1", "ack", d.d, d.d.Ack)
	after, errAfter := f.pendingOf(insp, topic, group)
	stored, _, errStored := f.copies(topic, id)
	pos := d.d.Position()
	return func(r *spec.R) {
		f.must(r, errBefore, "reading the pending list before the ack")
		held, ok := findPending(before, pos)
		r.Expect(ok).To(gomega.BeTrue(), "a delivered, unacknowledged entry must be on the group's pending list; %s is not (%s)", pos, describePending(before))
		r.Ev.Figure("deliveries before the ack", held.Deliveries, "")
		f.must(r, ackErr, "the ack (XACK) must be confirmed")
		f.must(r, errAfter, "reading the pending list after the ack")
		_, still := findPending(after, pos)
		r.Expect(still).To(gomega.BeFalse(), "XACK must remove the entry from the group's pending list; %s is still on it (%s)", pos, describePending(after))
		f.must(r, errStored, "reading the stream back")
		r.Ev.Figure("stored after the ack", stored, "")
		r.Expect(stored).To(gomega.Equal(1), "XACK removes a pending reference and deletes nothing: the entry must stay in the stream; %d copies of %s are stored", stored, id)
		r.Ev.Notef("entry %s held by %s (deliveries %d) before the ack; off the pending list after it; still stored in the stream", pos, held.Member, held.Deliveries)
	}
}

// idleClaim is BR-4.2: member-1 takes an entry and holds it without
// acking; member-2 of the same group fetches until it gets the entry,
// which must not be before the ack wait (the claim's min-idle-time), and
// the pending list must then show it held by another member with its
// delivery counter one higher.
func idleClaim(f *fixture) judge {
	insp, fail := f.inspector()
	if fail != nil {
		return fail
	}
	aw, tol := f.w.AckWait, f.w.Tolerance
	id := f.name("m")
	topic, group, c1, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
	if err != nil {
		return f.failed(err, "setting up")
	}
	c2, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: aw})
	if err != nil {
		return f.failed(err, "opening the second member")
	}
	first, err := f.next("member-1", c1, time.Now().Add(aw))
	if err != nil || first == nil {
		return f.failed(noDelivery("no first delivery", err), "first delivery")
	}
	held, errHeld := f.pendingOf(insp, topic, group)
	// member-1 stays connected and idle: only a claim moves the entry.
	again, errAgain := f.next("member-2", c2, first.at.Add(aw+4*tol))
	var claimed []mq.Pending
	var errClaimed error
	if again != nil {
		claimed, errClaimed = f.pendingOf(insp, topic, group)
		_ = f.settle("member-2", "ack", again.d, again.d.Ack)
	}
	pos := first.d.Position()
	f.ev.Figure("declared ack wait (min-idle-time)", aw.Seconds(), "s")
	return func(r *spec.R) {
		f.must(r, errHeld, "reading the pending list after the first delivery")
		p1, ok := findPending(held, pos)
		r.Expect(ok).To(gomega.BeTrue(), "the delivered entry %s must be pending (%s)", pos, describePending(held))
		f.must(r, errAgain, "member-2 fetching")
		if again == nil {
			f.missed(r, "an entry idle past the min-idle-time %s must be claimed by another member; member-2 got nothing within %s", aw, aw+4*tol)
		}
		delay := again.at.Sub(first.at)
		r.Ev.Figure("claimed by member-2 after", delay.Seconds(), "s")
		r.Expect(string(again.d.Message().Payload)).To(gomega.Equal("body of "+id), "member-2 claimed another message")
		f.atLeast(r, delay, aw-tol, "claimed after %.3fs: before the min-idle-time %s (minus the tolerance) its holder was still within its ack wait", delay.Seconds(), aw)
		f.must(r, errClaimed, "reading the pending list after the claim")
		p2, ok := findPending(claimed, pos)
		r.Expect(ok).To(gomega.BeTrue(), "the claimed entry %s must still be pending until member-2 acks it (%s)", pos, describePending(claimed))
		r.Expect(p2.Member).NotTo(gomega.Equal(p1.Member), "the claim must move the entry to another member; it is still held by %s", p1.Member)
		r.Ev.Figure("delivery counter", []int{p1.Deliveries, p2.Deliveries}, "")
		r.Expect(p2.Deliveries).To(gomega.Equal(p1.Deliveries+1), "the claim must raise the entry's delivery counter: %d before, %d after", p1.Deliveries, p2.Deliveries)
		r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the claimed delivery's attempt number must be one higher than the first (%d)", first.d.Attempt())
		r.Ev.Notef("held by %s (deliveries %d); claimed by %s after %.3fs (min-idle-time %s), deliveries %d, attempt %d",
			p1.Member, p1.Deliveries, p2.Member, delay.Seconds(), aw, p2.Deliveries, again.d.Attempt())
	}
}

// Shape of BR-4.3: trimCount entries published and delivered, the first
// acked, the stream cut to its newest trimKeep.
const (
	trimCount = 6
	trimKeep  = 2
)

// trimDropsPending is BR-4.3: entries delivered and not acked are cut by
// a trim; the kit measures what the cut removed, which of it was still
// pending, and whether any of that comes back after the ack wait, and
// compares it with what the adapter said its trim did.
func trimDropsPending(f *fixture) judge {
	insp, fail := f.inspector()
	if fail != nil {
		return fail
	}
	trimmer, ok := f.b.(mq.Trimmer)
	if !ok {
		return func(r *spec.R) {
			r.Expect(ok).To(gomega.BeTrue(), "the target declares trim but its handle (%T) has no Trim method (mq.Trimmer)", f.b)
		}
	}
	aw, tol := f.w.AckWait, f.w.Tolerance
	var ids []string
	for i := range trimCount {
		ids = append(ids, f.name(fmt.Sprintf("m%d", i)))
	}
	topic, group, c1, err := f.setup(mq.ConsumerConfig{AckWait: aw}, ids...)
	if err != nil {
		return f.failed(err, "setting up")
	}
	c2, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: aw})
	if err != nil {
		return f.failed(err, "opening the second member")
	}
	var got []*delivered
	for len(got) < trimCount {
		d, err := f.next("member-1", c1, time.Now().Add(aw))
		if err != nil || d == nil {
			return f.failed(noDelivery(fmt.Sprintf("only %d of %d first deliveries", len(got), trimCount), err), "first deliveries")
		}
		got = append(got, d)
	}
	ackErr := f.settle("member-1", "ack", got[0].d, got[0].d.Ack)
	pendingBefore, errPB := f.pendingOf(insp, topic, group)
	storedBefore, errSB := f.b.ReadAll(f.ctx, topic)
	errSB = unsure("reading the stream", errSB)

	f.cut()
	h := f.rec.Invoke("kit", "trim", fmt.Sprintf("%s keep=%d", topic, trimKeep))
	tr, trimErr := trimmer.Trim(f.ctx, topic, trimKeep)
	if trimErr != nil {
		h.Info(trimErr.Error())
		trimErr = unsure("trimming", trimErr)
	} else {
		h.OK(fmt.Sprintf("%s: %d removed (reply), keepsPending=%v", tr.Command, tr.Removed, tr.KeepsPending))
	}
	trimmedAt := time.Now()
	storedAfter, errSA := f.b.ReadAll(f.ctx, topic)
	errSA = unsure("reading the stream", errSA)
	pendingAfter, errPA := f.pendingOf(insp, topic, group)

	// member-1 holds what is pending; after the ack wait member-2 claims
	// what can still be claimed.
	back := map[string]bool{}
	var errBack error
	deadline := trimmedAt.Add(aw + 4*tol)
	for {
		d, err := f.next("member-2", c2, deadline)
		if err != nil {
			errBack = err
			break
		}
		if d == nil {
			break
		}
		back[d.d.Position()] = true
		_ = f.settle("member-2", "ack", d.d, d.d.Ack)
	}

	kept := map[string]bool{}
	for _, s := range storedAfter {
		kept[s.Position] = true
	}
	var dropped, survived, trimmedBack []string
	for _, p := range pendingBefore {
		if kept[p.Position] {
			survived = append(survived, p.Position)
			continue
		}
		dropped = append(dropped, p.Position)
		if back[p.Position] {
			trimmedBack = append(trimmedBack, p.Position)
		}
	}
	var dangling int
	for _, p := range pendingAfter {
		if !kept[p.Position] {
			dangling++
		}
	}
	removed := len(storedBefore) - len(storedAfter)
	return func(r *spec.R) {
		f.must(r, ackErr, "acking the first entry")
		f.must(r, errPB, "reading the pending list before the trim")
		f.must(r, errSB, "reading the stream before the trim")
		r.Expect(len(pendingBefore)).To(gomega.Equal(trimCount-1), "before the trim %d entries must be pending (delivered, not acked): %s", trimCount-1, describePending(pendingBefore))
		f.must(r, trimErr, "trimming the stream to %d entries", trimKeep)
		f.must(r, errSA, "reading the stream after the trim")
		f.must(r, errPA, "reading the pending list after the trim")
		f.must(r, errBack, "member-2 fetching after the trim")
		r.Ev.Figure("stored before the trim", len(storedBefore), "")
		r.Ev.Figure("stored after the trim", len(storedAfter), "")
		r.Ev.Figure("removed, as the broker replied", tr.Removed, "")
		r.Ev.Figure("pending entries trimmed away", len(dropped), "")
		r.Ev.Figure("trimmed pending entries still on the pending list", dangling, "")
		r.Ev.Figure("trimmed pending entries redelivered after the ack wait", len(trimmedBack), "")
		r.Ev.Figure("surviving pending entries redelivered after the ack wait", countIn(survived, back), "")
		r.Ev.Notef("%s: %d of %d stored entries removed (the reply says %d); %d of the %d pending entries were cut (%s), %d of them still listed as pending afterwards, %d redelivered; %d survived the cut and %d of those were claimed by member-2 after the ack wait",
			tr.Command, removed, len(storedBefore), tr.Removed, len(dropped), len(pendingBefore), strings.Join(dropped, ", "), dangling, len(trimmedBack), len(survived), countIn(survived, back))
		r.Expect(tr.Removed).To(gomega.Equal(removed), "the trim's reply must say what it removed: %s reports %d removed, the stream lost %d (%d stored before, %d after)", tr.Command, tr.Removed, removed, len(storedBefore), len(storedAfter))
		if tr.KeepsPending {
			r.Expect(dropped).To(gomega.BeEmpty(), "the adapter says its trim keeps entries still pending; %s cut %d pending entries of group %s: %s", tr.Command, len(dropped), group, strings.Join(dropped, ", "))
		}
		r.Expect(trimmedBack).To(gomega.BeEmpty(), "an entry cut from the stream cannot be delivered again with its content; %d came back: %s", len(trimmedBack), strings.Join(trimmedBack, ", "))
		if len(dropped) == 0 {
			r.Ev.Notef("the trim cut no entry still pending")
			return
		}
		r.Ev.Hazard("%s cut %d entries still pending in group %s (delivered, never acknowledged: %s); they are gone from the stream and are never redelivered, so a consumer that died before acking them loses them for good. XACK keeps an entry until a trim or XDEL removes it; a trim does not wait for the ack",
			tr.Command, len(dropped), group, strings.Join(dropped, ", "))
	}
}

func countIn(ids []string, set map[string]bool) int {
	return len(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !set[id] }))
}
