package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// setup creates a limits topic, opens one member of a fresh group and
// publishes one message: the start of most delivery rules.
func (f *fixture) setup(cfg mq.ConsumerConfig, ids ...string) (string, string, mq.Consumer, error) {
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return "", "", nil, err
	}
	group := f.name("g")
	c, err := f.consumer(topic, group, cfg)
	if err != nil {
		return "", "", nil, err
	}
	for _, id := range ids {
		if _, err := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte("body of " + id)}); err != nil {
			return "", "", nil, err
		}
	}
	return topic, group, c, nil
}

// lookedBefore is a delivery that knows when its member last looked for
// redeliveries and found none (Redis: the previous empty claim). Where the
// client's own polling redelivers, the redelivery came after that look, and
// a gap between looks is the kit's.
type lookedBefore interface{ LookedBefore() time.Time }

func registerDelivery(p *plan) {
	p.set.Background("BR-2.1", p.workload("BR-2.1", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return firstRedelivery(w) + w.Tolerance }, func(f *fixture) judge {

		aw, tol := firstRedelivery(f.w), f.w.Tolerance
		setting := "ack wait (first redelivery)"
		if len(f.w.Backoff) > 0 {
			setting = "back-off[0] (first redelivery)"
		}
		id := f.name("m")
		_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: f.w.AckWait, Backoff: f.w.Backoff}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		first, err := f.next("member-1", c, time.Now().Add(aw))
		if err != nil || first == nil {
			return f.failed(noDelivery("no first delivery", err), "first delivery")
		}
		w := f.watch("member-1", c, first.at.Add(aw+3*tol))
		f.ev.Figure("declared ack wait", aw.Seconds(), "s")
		f.ev.Figure("tolerance", tol.Seconds(), "s")
		if f.t.Declared == nil {
			f.ev.SetupHazard("the ack wait measured is the kit's own test window (%s) on a scratch consumer, not a team's configuration; tck run --profile measures the declared one", aw)
		}
		return func(r *spec.R) {
			// Nothing by the watch's end (aw+3tol) is a deadline missed:
			// unknown, unless the kit holds a proof (see missed).
			again, ok := <-w.back("")
			if !ok {
				f.must(r, w.Err(), "watching for the redelivery")
				f.missed(r, "an unacknowledged delivery must come back after the ack wait %s; nothing came within %s", aw, aw+3*tol)
			}
			delay := again.at.Sub(first.at)
			r.Ev.Figure("measured redelivery delay", delay.Seconds(), "s")
			r.Ev.Compare(verdict.Comparison{Setting: setting, Declared: aw.String(), Actual: delay.Round(time.Millisecond).String(),
				Source: "measured", Match: delay >= aw-tol && delay <= aw+tol})
			r.Ev.Figure("attempts", []int{first.d.Attempt(), again.d.Attempt()}, "")
			r.Ev.Notef("redelivered after %.3fs (ack wait %s ± %s), attempt %d -> %d", delay.Seconds(), aw, tol, first.d.Attempt(), again.d.Attempt())
			// The attempt number first: it is the broker's own count, which
			// no lateness of the kit's changes, so a wrong one is evidence
			// whatever the timing below may excuse.
			r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery's attempt number must be one higher than the first (%d)", first.d.Attempt())
			if lb, ok := again.d.(lookedBefore); ok && delay > aw+tol {
				if prev := lb.LookedBefore(); !prev.IsZero() && prev.Sub(first.at) <= aw+tol {
					r.Ev.Figure("the member's previous look, which found nothing", prev.Sub(first.at).Seconds(), "s")
					r.Unknown("redelivered after %.3fs, later than the ack wait %s plus the tolerance, but the member's previous look for claimable entries, which found nothing, was at %.3fs, inside it: between the two looks the kit did not ask, so whether the entry became claimable in time is not known (%s: a loaded host spaces out the kit's own polling)", delay.Seconds(), aw, prev.Sub(first.at).Seconds(), stall.Late("the member's next look for claimable entries", aw, delay))
				}
			}
			f.span = [2]time.Time{first.at, again.at}
			f.atLeast(r, delay, aw-tol, "redelivered after %.3fs, before the ack wait %s minus the tolerance", delay.Seconds(), aw)
			f.atMost(r, delay, aw+tol, "redelivered after %.3fs, later than the ack wait %s plus the tolerance", delay.Seconds(), aw)
			f.span = [2]time.Time{}
		}
	}))

	p.set.Background("BR-2.2", p.workload("BR-2.2", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return 3 * w.AckWait }, func(f *fixture) judge {
		return settledStaysSettled(f, "ack", func(d mq.Delivery) func(context.Context) error { return d.Ack }, 3,
			"the ack must be confirmed", "a confirmed ack must stop redelivery", "three ack waits", "a confirmed ack")
	}))

	p.set.Background("BR-2.3", p.workload("BR-2.3", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, func(f *fixture) judge {
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
		h := f.rec.Invoke("member-1", "crash", "close the connection without acking")
		if err := c1.Close(); err != nil {
			h.Info(err.Error())
		} else {
			h.OK("")
		}
		f.committedPast(topic, group, first.d)
		w := f.watch("member-2", c2, first.at.Add(aw+4*tol))
		return func(r *spec.R) {
			// Again now: an ack a client sent as it closed may have taken
			// a moment to reach the server.
			f.committedPast(topic, group, first.d)
			f.proven(r)
			// Nothing by the watch's end (aw+4tol) is a deadline missed:
			// unknown, unless the kit holds a proof (the group holds the
			// delivery as acked or committed: committedPast).
			again, ok := <-w.back("")
			if !ok {
				f.committedPast(topic, group, first.d)
				f.must(r, w.Err(), "watching for the redelivery")
				f.missed(r, "the delivery of a member that died before acking must be redelivered to another member; member-2 got nothing within %s", aw+4*tol)
			}
			r.Expect(string(again.d.Message().Payload)).To(gomega.Equal("body of "+id), "member-2 got another message")
			r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery's attempt number")
			r.Ev.Figure("redelivered to member-2 after", again.at.Sub(first.at).Seconds(), "s")
			r.Ev.Notef("member-1 closed without acking; member-2 got the message after %.3fs, attempt %d", again.at.Sub(first.at).Seconds(), again.d.Attempt())
		}
	}))

	p.set.Background("BR-2.4", p.workload("BR-2.4", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.NakDelay }, func(f *fixture) judge {
		aw, nd, tol := f.w.AckWait, f.w.NakDelay, f.w.Tolerance
		plain, delayed := f.name("plain"), f.name("delayed")
		topic, group, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, plain, delayed)
		if err != nil {
			return f.failed(err, "setting up")
		}
		got := map[string]*delivered{}
		plain, delayed = "body of "+plain, "body of "+delayed
		for len(got) < 2 {
			d, err := f.next("member-1", c, time.Now().Add(aw))
			if err != nil || d == nil {
				return f.failed(noDelivery(fmt.Sprintf("only %d of 2 first deliveries", len(got)), err), "first deliveries")
			}
			got[string(d.d.Message().Payload)] = d
		}
		nakAt := map[string]time.Time{}
		errP := f.settle("member-1", "nak", got[plain].d, func(ctx ctxT) error { return got[plain].d.Nak(ctx, 0) })
		nakAt[plain] = time.Now()
		errD := f.settle("member-1", fmt.Sprintf("nak(delay=%s)", nd), got[delayed].d, func(ctx ctxT) error { return got[delayed].d.Nak(ctx, nd) })
		nakAt[delayed] = time.Now()
		// Watched past the ack wait, so a nak the broker ignored comes back
		// (at the ack wait) and is measured late, not a deadline missed.
		within := nd + aw + 3*tol
		w := f.watch("member-1", c, time.Now().Add(within), plain, delayed)
		f.ev.Figure("declared nak delay", nd.Seconds(), "s")
		return func(r *spec.R) {
			f.must(r, errP, "nak")
			f.must(r, errD, "nak with delay")
			dp, ok := <-w.back(plain)
			if !ok {
				f.heldAcked(topic, group, got[plain].d, "and the kit never acked it (it sent a nak): an ack the kit never sent, so the delivery cannot come back")
				f.must(r, w.Err(), "watching for the redelivery")
				f.missed(r, "a nak must redeliver; the nak'd message did not come back within %s", within)
			}
			bp := dp.at.Sub(nakAt[plain])
			r.Ev.Figure("plain nak redelivered after", bp.Seconds(), "s")
			// As BR-2.1: the kit's lateness inside the measured interval
			// (many short pauses on a starved host) may explain the excess.
			f.span = [2]time.Time{nakAt[plain], dp.at}
			f.atMost(r, bp, aw/2, "a nak must redeliver as soon as possible, not wait for the ack wait; it came back after %.3fs", bp.Seconds())
			f.span = [2]time.Time{}
			dd, ok := <-w.back(delayed)
			if !ok {
				f.heldAcked(topic, group, got[delayed].d, "and the kit never acked it (it sent a nak with delay): an ack the kit never sent, so the delivery cannot come back")
				f.must(r, w.Err(), "watching for the redelivery")
				f.missed(r, "a nak with delay %s must redeliver after the delay; nothing came within %s", nd, within)
			}
			bd := dd.at.Sub(nakAt[delayed])
			r.Ev.Figure("delayed nak redelivered after", bd.Seconds(), "s")
			f.atLeast(r, bd, nd-tol/5, "a nak with delay %s came back after %.3fs, before the delay", nd, bd.Seconds())
			r.Ev.Figure("attempts (nak)", []int{got[plain].d.Attempt(), dp.d.Attempt()}, "")
			r.Ev.Figure("attempts (nak with delay)", []int{got[delayed].d.Attempt(), dd.d.Attempt()}, "")
			r.Expect(dp.d.Attempt()).To(gomega.Equal(got[plain].d.Attempt()+1),
				"the redelivery after a nak must be exactly one attempt higher than the nak'd delivery (%d)", got[plain].d.Attempt())
			r.Expect(dd.d.Attempt()).To(gomega.Equal(got[delayed].d.Attempt()+1),
				"the redelivery after a nak with delay must be exactly one attempt higher than the nak'd delivery (%d)", got[delayed].d.Attempt())
			r.Ev.Notef("nak: back after %.3fs; nak with delay %s: back after %.3fs", bp.Seconds(), nd, bd.Seconds())
		}
	}))

	p.set.Background("BR-2.5", p.workload("BR-2.5", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return 2 * w.AckWait }, func(f *fixture) judge {
		return settledStaysSettled(f, "term", func(d mq.Delivery) func(context.Context) error { return d.Term }, 2,
			"term", "term must stop redelivery for good", "two ack waits", "term")
	}))

	p.set.Background("BR-2.6", p.workload("BR-2.6", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, func(f *fixture) judge {
		aw, max := f.w.AckWait, f.w.MaxDeliver
		id := f.name("m")
		topic, group, c, err := f.setup(mq.ConsumerConfig{AckWait: aw, MaxDeliver: max}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		var signals <-chan string
		watcher, canWatch := f.b.(mq.MaxDeliverWatcher)
		if canWatch {
			if err := f.kitStep("watch-max-deliver", topic+" group="+group, func() (err error) {
				signals, err = watcher.WatchMaxDeliver(f.ctx, topic, group)
				return err
			}); err != nil {
				return f.failed(err, "subscribing to the max-deliver signal")
			}
		}

		var attempts []int
		var last *delivered
		deadline := time.Now().Add(aw)
		for {
			d, err := f.next("member-1", c, deadline)
			if err != nil {
				return f.failed(err, "fetching")
			}
			if d == nil {
				break
			}
			last = d
			attempts = append(attempts, d.d.Attempt())
			_ = f.settle("member-1", "nak", d.d, func(ctx ctxT) error { return d.d.Nak(ctx, 0) })
			deadline = time.Now().Add(aw)
			if len(attempts) > max+2 {
				break
			}
		}
		f.ev.Figure("declared max deliver", max, "")
		f.ev.Figure("deliveries seen", len(attempts), "")
		f.ev.Compare(verdict.Comparison{Setting: "max deliver", Declared: fmt.Sprint(max), Actual: fmt.Sprintf("%d deliveries", len(attempts)),
			Source: "measured", Match: len(attempts) == max})
		return func(r *spec.R) {
			r.Ev.Notef("attempts seen: %v", attempts)
			for i := 1; i < len(attempts); i++ {
				r.Expect(attempts[i]).To(gomega.Equal(attempts[i-1]+1),
					"each redelivery after a nak must be exactly one attempt higher than the one before; attempts seen %v", attempts)
			}
			r.Expect(len(attempts)).To(gomega.BeNumerically("<=", max), "no delivery beyond max-deliver %d; attempts seen %v", max, attempts)
			if len(attempts) < max {
				// Fewer deliveries than max-deliver is a redelivery that
				// did not come within an ack wait: a deadline missed,
				// unless the broker shows it gave the message up.
				if last != nil {
					f.deadLetteredEarly(topic, group, id, len(attempts), max)
				}
				f.missed(r, "a nak'd message must be delivered up to max-deliver %d times; no redelivery came within %s of delivery %d (attempts seen %v)", max, aw, len(attempts), attempts)
			}
			if !canWatch {
				f.unknown(r, "deliveries stopped at %d, but the adapter exposes no max-deliver signal to observe", max)
			}
			signal, ok := f.receive(signals, aw/2)
			if !ok {
				f.noDeadLetterQueue(topic, group)
				f.missed(r, "the broker's max-deliver signal (advisory) must be observed once deliveries stop at %d; none came within %s", max, aw/2)
			}
			f.rec.Note("broker", "max-deliver signal", "pos="+signal, "")
		}
	}))

	p.set.Background("BR-2.7", p.workload("BR-2.7", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait * 16 / 10 }, func(f *fixture) judge {
		aw, tol := f.w.AckWait, f.w.Tolerance
		id := f.name("m")
		_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		first, err := f.next("member-1", c, time.Now().Add(aw))
		if err != nil || first == nil {
			return f.failed(noDelivery("no first delivery", err), "first delivery")
		}
		f.sleepUntil(first.at.Add(aw * 6 / 10))
		ipErr := f.settle("member-1", "in-progress", first.d, first.d.InProgress)
		ipAt := time.Now()
		// Only a lower bound is judged (the redelivery must come after the
		// pushed-back deadline), so the watch may run long: a loaded
		// runner delays an in-process broker's own timers (kfake's share
		// lock came back after 3.5 s of a 2 s ack wait beside four
		// burners), and a late redelivery still locates the deadline.
		watchFor := 2*aw + 3*tol
		w := f.watch("member-1", c, ipAt.Add(watchFor))
		return func(r *spec.R) {
			f.must(r, ipErr, "in-progress")

			again, ok := <-w.back("")
			f.must(r, w.Err(), "fetching")
			if !ok {
				f.unknown(r, "no redelivery at all within %s after in-progress, so the pushed-back deadline could not be located", watchFor)
			}
			since := again.at.Sub(first.at)
			r.Ev.Figure("attempts", []int{first.d.Attempt(), again.d.Attempt()}, "")
			r.Ev.Figure("redelivered after first delivery", since.Seconds(), "s")
			r.Ev.Figure("redelivered after in-progress", again.at.Sub(ipAt).Seconds(), "s")
			if late := ipAt.Sub(first.at); late >= aw-tol {

				f.unknown(r, "%s after the delivery, when the ack wait %s had run out: whether it pushes the deadline back was not tested", stall.Late("the in-progress", aw*6/10, late), aw)
			}
			// An in-progress is not a delivery: the one redelivery is
			// exactly one attempt higher (Redis: XCLAIM without JUSTID
			// would count the in-progress as a delivery, 1 -> 3). The
			// broker's own count comes first: no lateness of the kit's
			// changes it.
			r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1),
				"an in-progress must not count as a delivery: the redelivery after it must be exactly one attempt higher than the first (%d), got attempt %d", first.d.Attempt(), again.d.Attempt())
			f.atLeast(r, since, aw+tol,
				"in-progress at %.2fs must push the deadline back; the message came back after %.3fs, at the original ack wait %s", (aw * 6 / 10).Seconds(), since.Seconds(), aw)
			f.atLeast(r, again.at.Sub(ipAt), aw-tol, "redelivered %.3fs after in-progress, earlier than one ack wait", again.at.Sub(ipAt).Seconds())
			r.Ev.Notef("in-progress at %.2fs pushed the deadline back: redelivered after %.3fs, %.3fs after the in-progress (ack wait %s), attempt %d -> %d",
				(aw * 6 / 10).Seconds(), since.Seconds(), again.at.Sub(ipAt).Seconds(), aw, first.d.Attempt(), again.d.Attempt())
		}
	}))

	p.set.Background("BR-2.8", p.workload("BR-2.8", func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }, func(f *fixture) judge {
		var acked []*ackedOne
		for _, r := range []mq.Retention{mq.Limits, mq.WorkQueue} {
			if !slices.Contains(f.t.Caps.Retentions, r) {
				f.ev.Notef("%s retention not measured: the target does not declare it", r)
				continue
			}
			acked = append(acked, f.consumeAndAck(r))
		}
		return func(r *spec.R) {
			if len(acked) == 0 {
				r.NotApplicable("the target declares neither limits nor work-queue retention")
			}
			for _, a := range acked {
				f.must(r, a.err, "%s retention", a.retention)
				a.judge(r)
			}
		}
	}))

}

// ackedOne is one message of BR-2.8: published on a topic of its own
// retention, counted, consumed and acked.
type ackedOne struct {
	f         *fixture
	retention mq.Retention
	topic, id string
	group     string
	acked     mq.Delivery // the delivery whose ack was confirmed
	before    int
	err       error
}

// consumeAndAck publishes one message on a topic with retention r, counts
// it, consumes it and acks it.
func (f *fixture) consumeAndAck(r mq.Retention) *ackedOne {
	a := &ackedOne{f: f, retention: r}
	aw := f.w.AckWait
	if a.topic, a.err = f.topic(string(r), mq.TopicConfig{Retention: r}); a.err != nil {
		return a
	}
	a.id = f.name("m")
	if _, a.err = f.publish("producer", a.topic, mq.Message{ID: a.id, Payload: []byte("E9")}); a.err != nil {
		return a
	}
	if a.before, _, a.err = f.copies(a.topic, a.id); a.err != nil {
		return a
	}
	a.group = f.name("g")
	c, err := f.consumer(a.topic, a.group, mq.ConsumerConfig{AckWait: aw})
	if a.err = err; err != nil {
		return a
	}
	d, err := f.next("member-1", c, time.Now().Add(aw))
	if err != nil || d == nil {
		a.err = noDelivery("no delivery", err)
		return a
	}
	if a.err = f.settle("member-1", "ack", d.d, d.d.Ack); a.err == nil {
		a.acked = d.d
	}
	return a
}

// judge counts what the topic stores after the ack: under limits the
// message stays; a work queue removes it as the ack is processed, so the
// removal gets a short moment.
func (a *ackedOne) judge(r *spec.R) {
	after := -1
	stored := func() (int, error) {
		n, _, err := a.f.copies(a.topic, a.id)
		after = n
		return n, err
	}
	defer func() {
		r.Ev.Figure(fmt.Sprintf("%s: stored after ack", a.retention), after, "")
		r.Ev.Notef("%s retention: %d stored before the ack, %d after", a.retention, a.before, after)
	}()
	if a.retention == mq.Limits {
		n, err := stored()
		a.f.must(r, err, "reading the topic back")
		r.Expect(a.before).To(gomega.Equal(1), "%s retention: the message must be stored before the ack", a.retention)
		r.Expect(n).To(gomega.Equal(1), "under limits retention an ack is not a delete: the message must stay readable")
		return
	}
	r.Expect(a.before).To(gomega.Equal(1), "%s retention: the message must be stored before the ack", a.retention)
	// The removal follows the ack on the broker's own schedule: it gets an
	// ack wait of the kit's scheduled time. Still stored then is a deadline
	// missed, unless the server holds the topic with another retention
	// than the one the kit created it with.
	wait := max(a.f.w.AckWait, 2*time.Second)
	start := time.Now()
	for {
		n, err := stored()
		a.f.must(r, err, "reading the topic back")
		if n == 0 {
			return
		}
		if stall.Scheduled(start, time.Now()) >= wait || a.f.ctx.Err() != nil {
			break
		}
		a.f.pause(50 * time.Millisecond)
	}
	a.f.retentionHeld(a.topic, a.retention)
	if a.acked != nil {
		a.f.ackNotHeld(a.topic, a.group, a.acked)
	}
	a.f.missed(r, "under work-queue retention the ack must remove the message; it was still stored %s after the ack was confirmed", wait)
}

// settledStaysSettled is the workload of BR-2.2 and BR-2.5: take one
// delivery, settle it with action, then watch waits ack waits for the
// message to come back; it must not.
func settledStaysSettled(f *fixture, action string, settle func(mq.Delivery) func(context.Context) error, waits int,
	settleMsg, stopMsg, watchedFor, after string) judge {
	aw := f.w.AckWait
	_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, f.name("m"))
	if err != nil {
		return f.failed(err, "setting up")
	}
	first, err := f.next("member-1", c, time.Now().Add(aw))
	if err != nil || first == nil {
		return f.failed(noDelivery("no first delivery", err), "first delivery")
	}
	settleErr := f.settle("member-1", action, first.d, settle(first.d))
	settled := time.Since(first.at)
	watch := time.Duration(waits) * aw
	w := f.watch("member-1", c, first.at.Add(watch))
	f.ev.Figure("watched for", watch.Seconds(), "s")
	return func(r *spec.R) {
		f.must(r, settleErr, "%s", settleMsg)
		r.Excuse(func(failure string) string {
			if settled < aw-f.w.Tolerance || f.hasProof() {
				return ""
			}
			// The kit settled late: the ack wait had (nearly) run out, so
			// the broker may rightly have redelivered first.
			return fmt.Sprintf("%s after the delivery, at the end of the ack wait %s, so a redelivery proves nothing: %s", stall.Late("the "+action, 0, settled), aw, failure)
		})
		var again *delivered
		r.Consistently(w.back("")).WithTimeout(f.left()).ShouldNot(gomega.Receive(&again), func() string {
			return fmt.Sprintf("%s; the message came back after %.3fs (attempt %d)", stopMsg, again.at.Sub(first.at).Seconds(), again.d.Attempt())
		})
		f.must(r, w.Err(), "watching for a redelivery")
		r.Ev.Notef("no redelivery in %s (%s) after %s", watch, watchedFor, after)
	}
}
