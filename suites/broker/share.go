package broker

import (
	"fmt"
	"maps"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// The BR-9 rules are where a Kafka share group (KIP-932) differs from the
// BR-2 ack-wait model: the broker's delivery count and the archival at its
// limit, the acquisition lock of a member that stopped, and an ACCEPT that
// ends a record for one group only. The BR-2 rules themselves run on a
// share group unchanged (the lock is the ack wait, RELEASE the nak, REJECT
// the term, RENEW the in-progress, the delivery count limit the
// max-deliver).

// shareOnly is why a BR-9 rule does not apply to a broker without share
// groups (the target's own reason, when it gives one, comes first).
var shareOnly = map[string]string{
	"BR-9.1": "a Kafka share-group rule (KIP-932): it needs a broker that counts each acquisition of a record and archives it at group.share.delivery.count.limit; this broker's max-deliver, if any, is BR-2.6's",
	"BR-9.2": "a Kafka share-group rule (KIP-932): it needs records archived at a delivery limit without a dead-letter topic; this broker's max-deliver, if any, is BR-2.6's",
	"BR-9.3": "a Kafka share-group rule (KIP-932): it needs records acquired under a lock by a member whose session outlives it; this broker's ack wait, if any, is BR-2.1's",
	"BR-9.4": "a Kafka share-group rule (KIP-932): it needs share groups; this broker's ack-is-not-delete, if any, is BR-2.8's",
}

// lockDeadline is a delivery that knows the lock deadline its broker
// announced with it (kgo: Record.AcquisitionDeadline).
type lockDeadline interface{ LockDeadline() time.Time }

func registerShare(p *plan) {
	reasons := map[string]string{}
	maps.Copy(reasons, shareOnly)
	maps.Copy(reasons, p.set.Reasons)
	p.set.Reasons = reasons
	limitWaits := func(w kithooks.Windows, _ mq.Capabilities) time.Duration {
		return time.Duration(w.MaxDeliver+1) * w.AckWait
	}
	p.set.Background("BR-9.1", p.workload("BR-9.1", limitWaits, releaseCount))
	p.set.Background("BR-9.2", p.workload("BR-9.2", func(w kithooks.Windows, c mq.Capabilities) time.Duration { return limitWaits(w, c) + 2*w.AckWait }, archivedGone))
	p.set.Background("BR-9.3", p.workload("BR-9.3", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, hungMember))
	p.set.Background("BR-9.4", p.workload("BR-9.4", func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }, acceptNotDelete))
}

// released is one record released until the broker stopped delivering it.
type released struct {
	topic, group, id string
	c                mq.Consumer
	attempts         []int
	last             *delivered
	signals          <-chan string // archival (mq.MaxDeliverWatcher); nil without
}

// releaseToLimit publishes one record and releases (naks) every delivery
// of it until none comes within a lock after the last release, or until
// it came two more times than the limit.
func (f *fixture) releaseToLimit() (*released, error) {
	aw, limit := f.w.AckWait, f.w.MaxDeliver
	rl := &released{id: f.name("m")}
	var err error
	rl.topic, rl.group, rl.c, err = f.setup(mq.ConsumerConfig{AckWait: aw, MaxDeliver: limit}, rl.id)
	if err != nil {
		return nil, err
	}
	if watcher, ok := f.b.(mq.MaxDeliverWatcher); ok {
		if err := f.kitStep("watch-archived", rl.topic+" group="+rl.group, func() (err error) {
			rl.signals, err = watcher.WatchMaxDeliver(f.ctx, rl.topic, rl.group)
			return err
		}); err != nil {
			return nil, err
		}
	}
	deadline := f.arrival()
	for len(rl.attempts) < limit+2 {
		d, err := f.next("member-1", rl.c, deadline)
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		rl.last = d
		rl.attempts = append(rl.attempts, d.d.Attempt())
		if len(rl.attempts) == limit+2 {
			break // left unsettled: it comes back once more if it is not archived
		}
		if err := f.settle("member-1", "release", d.d, func(ctx ctxT) error { return d.d.Nak(ctx, 0) }); err != nil {
			return nil, err
		}
		deadline = time.Now().Add(aw)
	}
	if rl.last == nil {
		return nil, noDelivery("no first delivery", nil)
	}
	f.ev.Figure("declared delivery count limit", limit, "")
	f.ev.Figure("deliveries seen", len(rl.attempts), "")
	f.ev.Figure("delivery counts", rl.attempts, "")
	f.ev.Compare(verdict.Comparison{Setting: "group.share.delivery.count.limit", Declared: fmt.Sprint(limit), Actual: fmt.Sprintf("%d deliveries", len(rl.attempts)),
		Source: "measured", Match: len(rl.attempts) == limit})
	return rl, nil
}

// tooFew judges a record delivered fewer times than the limit: a proof
// that the group holds it as accepted (the kit only released it), else a
// deadline missed.
func (f *fixture) tooFew(r *spec.R, rl *released) {
	limit := f.w.MaxDeliver
	if len(rl.attempts) >= limit {
		return
	}
	f.heldAcked(rl.topic, rl.group, rl.last.d, "and the kit never accepted it (it released each delivery): an accept the kit never sent, so the record was neither redelivered nor archived")
	f.missed(r, "a released record must be delivered up to the delivery count limit %d times; no redelivery came within %s of delivery %d (delivery counts %v)", limit, f.w.AckWait, len(rl.attempts), rl.attempts)
}

// releaseCount is BR-9.1's workload.
func releaseCount(f *fixture) judge {
	rl, err := f.releaseToLimit()
	if err != nil {
		return f.failed(err, "releasing the record to its limit")
	}
	limit, aw := f.w.MaxDeliver, f.w.AckWait
	return func(r *spec.R) {
		r.Ev.Notef("delivery counts seen: %v (limit %d)", rl.attempts, limit)
		for i, a := range rl.attempts {
			r.Expect(a).To(gomega.Equal(i+1), "each RELEASE must count one delivery: delivery %d of the record came with delivery count %d (counts %v)", i+1, a, rl.attempts)
		}
		r.Expect(len(rl.attempts)).To(gomega.BeNumerically("<=", limit), "a record released at the delivery count limit %d must be archived, not delivered again; delivered %d times (counts %v)", limit, len(rl.attempts), rl.attempts)
		f.tooFew(r, rl)
		if rl.signals == nil {
			f.unknown(r, "deliveries stopped at the limit %d, but the adapter offers no way to see the record archived (mq.MaxDeliverWatcher)", limit)
		}
		pos, ok := f.receive(rl.signals, aw)
		if !ok {
			f.missed(r, "the share-partition start offset must pass the record archived at the limit %d; it did not within %s", limit, aw)
		}
		f.rec.Note("broker", "archived", "pos="+pos, "")
		r.Expect(pos).To(gomega.Equal(rl.last.d.Position()), "the record archived must be the one released %d times", limit)
	}
}

// archivedGone is BR-9.2's workload: release the record to its limit,
// then watch the group, with its member and a new one, for two locks: the
// archived record must not come back; its copy in the log is the hazard.
func archivedGone(f *fixture) judge {
	rl, err := f.releaseToLimit()
	if err != nil {
		return f.failed(err, "releasing the record to its limit")
	}
	aw := f.w.AckWait
	c2, err := f.consumer(rl.topic, rl.group, mq.ConsumerConfig{AckWait: aw, MaxDeliver: f.w.MaxDeliver})
	if err != nil {
		return f.failed(err, "opening a second member")
	}
	from := time.Now()
	w1 := f.watch("member-1", rl.c, from.Add(2*aw))
	w2 := f.watch("member-2", c2, from.Add(2*aw))
	return func(r *spec.R) {
		limit := f.w.MaxDeliver
		r.Expect(len(rl.attempts)).To(gomega.BeNumerically("<=", limit), "a record released at the delivery count limit %d must be archived, not delivered again; delivered %d times (counts %v)", limit, len(rl.attempts), rl.attempts)
		f.tooFew(r, rl)
		for _, w := range []*watch{w1, w2} {
			var again *delivered
			r.Consistently(w.back("")).WithTimeout(f.left()).ShouldNot(gomega.Receive(&again), func() string {
				return fmt.Sprintf("a record archived at the delivery count limit %d must never be delivered to the group again; id %s came back %.3fs after the last release (delivery count %d)", limit, again.d.Message().ID, again.at.Sub(from).Seconds(), again.d.Attempt())
			})
			f.must(r, w.Err(), "watching for a delivery after archival")
		}
		n, _, err := f.copies(rl.topic, rl.id)
		f.must(r, err, "reading the topic back")
		r.Ev.Figure("copies in the log after archival", n, "")
		if n > 0 {
			r.Ev.Hazard("record %s, archived after %d deliveries, is still in the topic log at %s but will never be delivered to share group %s again: KIP-932 has no dead-letter topic before Kafka 4.4, so a record that fails %d times is lost to the group's consumers unless something reads the log (a poison record, or a consumer failing transiently %d times in a row)", rl.id, limit, rl.last.d.Position(), rl.group, limit, limit)
		}
		r.Ev.Notef("archived after %d deliveries (counts %v); nothing came back to either member in %s; %d copy in the log", len(rl.attempts), rl.attempts, 2*aw, n)
	}
}

// hungMember is BR-9.3's workload: member-1 acquires the record and then
// stops (it neither settles nor fetches; its client's session lives on);
// member-2 must get the record once the lock ended, not before.
func hungMember(f *fixture) judge {
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
	first, err := f.next("member-1", c1, f.arrival())
	if err != nil || first == nil {
		return f.failed(noDelivery("no first delivery", err), "first delivery")
	}
	f.rec.Note("member-1", "hang", "id="+id, "stops: neither settles nor fetches again; its session stays alive")
	w := f.watch("member-2", c2, first.at.Add(aw+4*tol))
	f.ev.Figure("declared lock", aw.Seconds(), "s")
	return func(r *spec.R) {
		if ld, ok := first.d.(lockDeadline); ok && !ld.LockDeadline().IsZero() {
			announced := ld.LockDeadline().Sub(first.at)
			r.Ev.Figure("lock announced by the broker", announced.Seconds(), "s")
			r.Ev.Compare(verdict.Comparison{Setting: "group.share.record.lock.duration.ms", Declared: aw.String(), Actual: announced.Round(time.Millisecond).String(),
				Source: "the broker's ShareFetch answer (AcquisitionLockTimeoutMillis)", Match: announced >= aw-tol && announced <= aw+tol})
			// The kit's lateness shortens what it reads as announced (it
			// reads the deadline after the broker set it), never lengthens it.
			r.Expect(announced.Seconds()).To(gomega.BeNumerically("<=", (aw+tol).Seconds()), "the broker's own acquisition lock for the record (ShareFetch AcquisitionLockTimeoutMillis) must be the declared %s: it announced %s, so a stopped member's records come back only then", aw, announced.Round(time.Millisecond))
			f.atLeast(r, announced, aw-tol, "the broker's own acquisition lock for the record (ShareFetch AcquisitionLockTimeoutMillis) must be the declared %s: it announced %s, so a stopped member's records come back that early", aw, announced.Round(time.Millisecond))
		} else {
			r.Ev.Notef("the delivery does not say the lock its broker announced (no LockDeadline): only the redelivery is judged")
		}
		again, ok := <-w.back("")
		if !ok {
			f.heldAcked(topic, group, first.d, "which member-1 acquired and never settled: an accept the kit never sent, so the record cannot go to another member")
			f.must(r, w.Err(), "watching for the redelivery")
			f.missed(r, "the record of a member that stopped must go to another member after the lock %s; member-2 got nothing within %s", aw, aw+4*tol)
		}
		since := again.at.Sub(first.at)
		r.Ev.Figure("redelivered to member-2 after", since.Seconds(), "s")
		r.Expect(string(again.d.Message().Payload)).To(gomega.Equal("body of "+id), "member-2 got another record")
		r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery after the lock must be one delivery higher than member-1's (%d)", first.d.Attempt())
		f.atLeast(r, since, aw-tol, "the record went to member-2 after %.3fs, before member-1's lock %s ended: a locked record handed out twice", since.Seconds(), aw)
		r.Ev.Notef("member-1 stopped holding the record; member-2 got it after %.3fs (lock %s), delivery count %d -> %d", since.Seconds(), aw, first.d.Attempt(), again.d.Attempt())
	}
}

// acceptNotDelete is BR-9.4's workload: group A accepts the record; it
// must stay in the log and a new share group B must be delivered it.
func acceptNotDelete(f *fixture) judge {
	aw := f.w.AckWait
	id := f.name("m")
	topic, _, ca, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
	if err != nil {
		return f.failed(err, "setting up")
	}
	d, err := f.next("group-A", ca, f.arrival())
	if err != nil || d == nil {
		return f.failed(noDelivery("no delivery to group A", err), "first delivery")
	}
	if err := f.settle("group-A", "ack", d.d, d.d.Ack); err != nil {
		return f.failed(err, "group A's accept")
	}
	n, _, err := f.copies(topic, id)
	if err != nil {
		return f.failed(err, "reading the topic back")
	}
	f.ev.Figure("copies in the log after group A's accept", n, "")
	var db *delivered
	if n > 0 {
		cb, err := f.consumer(topic, f.name("g"), mq.ConsumerConfig{AckWait: aw})
		if err != nil {
			return f.failed(err, "opening a member of group B")
		}
		if db, err = f.next("group-B", cb, f.arrival()); err != nil {
			return f.failed(err, "fetching for group B")
		}
		if db != nil {
			_ = f.settle("group-B", "ack", db.d, db.d.Ack)
		}
	}
	return func(r *spec.R) {
		r.Expect(n).To(gomega.Equal(1), "an ACCEPT is not a delete: the record must stay in the log after group A accepted it")
		if db == nil {
			f.missed(r, "a second share group must be delivered a record another group accepted; group B got nothing within %s", time.Until(f.arrival()).Round(time.Second))
		}
		r.Expect(db.d.Message().ID).To(gomega.Equal(id), "group B got another record")
		r.Expect(db.d.Attempt()).To(gomega.Equal(1), "group B's delivery count is its own: its first delivery is 1")
		r.Ev.Notef("group A accepted %s; it is still in the log and group B was delivered it (count %d)", id, db.d.Attempt())
	}
}
