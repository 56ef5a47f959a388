package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/spec"
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

func registerDelivery(p *plan) {
	p.add("BR-2.1", func(w Windows, _ mq.Capabilities) time.Duration { return w.AckWait + w.Tolerance }, func(f *fixture) judge {
		aw, tol := f.w.AckWait, f.w.Tolerance
		id := f.name("m")
		_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		first, err := f.next("member-1", c, time.Now().Add(aw))
		if err != nil || first == nil {
			return f.failed(fmt.Errorf("no first delivery: %v", err), "first delivery")
		}
		again, err := f.next("member-1", c, first.at.Add(aw+3*tol))
		if err != nil {
			return f.failed(err, "waiting for the redelivery")
		}
		if again != nil {
			_ = f.settle("member-1", "ack", again.d, again.d.Ack)
		}
		f.ev.Figure("declared ack wait", aw.Seconds(), "s")
		f.ev.Figure("tolerance", tol.Seconds(), "s")
		return func() {
			expect(again).NotTo(gomega.BeNil(), "an unacknowledged delivery must come back after the ack wait %s; nothing came within %s", aw, aw+3*tol)
			delay := again.at.Sub(first.at)
			f.ev.Figure("measured redelivery delay", delay.Seconds(), "s")
			f.ev.Figure("attempts", []int{first.d.Attempt(), again.d.Attempt()}, "")
			f.ev.Notef("redelivered after %.3fs (ack wait %s ± %s), attempt %d -> %d", delay.Seconds(), aw, tol, first.d.Attempt(), again.d.Attempt())
			expect(delay).To(gomega.BeNumerically(">=", aw-tol), "redelivered after %.3fs, before the ack wait %s minus the tolerance", delay.Seconds(), aw)
			expect(delay).To(gomega.BeNumerically("<=", aw+tol), "redelivered after %.3fs, later than the ack wait %s plus the tolerance", delay.Seconds(), aw)
			expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery's attempt number must be one higher than the first (%d)", first.d.Attempt())
		}
	})

	p.add("BR-2.2", func(w Windows, _ mq.Capabilities) time.Duration { return 3 * w.AckWait }, func(f *fixture) judge {
		return settledStaysSettled(f, "ack", func(d mq.Delivery) func(context.Context) error { return d.Ack }, 3,
			"the ack must be confirmed", "a confirmed ack must stop redelivery", "three ack waits", "a confirmed ack")
	})

	p.add("BR-2.3", func(w Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, func(f *fixture) judge {
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
			return f.failed(fmt.Errorf("no first delivery: %v", err), "first delivery")
		}
		h := f.rec.Invoke("member-1", "crash", "close the connection without acking")
		if err := c1.Close(); err != nil {
			h.Info(err.Error())
		} else {
			h.OK("")
		}
		again, err := f.next("member-2", c2, first.at.Add(aw+4*tol))
		if again != nil {
			_ = f.settle("member-2", "ack", again.d, again.d.Ack)
		}
		return func() {
			expect(err).NotTo(gomega.HaveOccurred(), "member-2 fetching")
			expect(again).NotTo(gomega.BeNil(), "the delivery of a member that died before acking must be redelivered to another member; member-2 got nothing within %s", aw+4*tol)
			expect(string(again.d.Message().Payload)).To(gomega.Equal("body of "+id), "member-2 got another message")
			expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery's attempt number")
			f.ev.Figure("redelivered to member-2 after", again.at.Sub(first.at).Seconds(), "s")
			f.ev.Notef("member-1 closed without acking; member-2 got the message after %.3fs, attempt %d", again.at.Sub(first.at).Seconds(), again.d.Attempt())
		}
	})

	p.add("BR-2.4", func(w Windows, _ mq.Capabilities) time.Duration { return w.NakDelay }, func(f *fixture) judge {
		aw, nd, tol := f.w.AckWait, f.w.NakDelay, f.w.Tolerance
		plain, delayed := f.name("plain"), f.name("delayed")
		_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, plain, delayed)
		if err != nil {
			return f.failed(err, "setting up")
		}
		got := map[string]*delivered{} // by payload: "body of <id>"
		plain, delayed = "body of "+plain, "body of "+delayed
		for len(got) < 2 {
			d, err := f.next("member-1", c, time.Now().Add(aw))
			if err != nil || d == nil {
				return f.failed(fmt.Errorf("only %d of 2 first deliveries: %v", len(got), err), "first deliveries")
			}
			got[string(d.d.Message().Payload)] = d
		}
		nakAt := map[string]time.Time{}
		errP := f.settle("member-1", "nak", got[plain].d, func(ctx ctxT) error { return got[plain].d.Nak(ctx, 0) })
		nakAt[plain] = time.Now()
		errD := f.settle("member-1", fmt.Sprintf("nak(delay=%s)", nd), got[delayed].d, func(ctx ctxT) error { return got[delayed].d.Nak(ctx, nd) })
		nakAt[delayed] = time.Now()
		back := map[string]time.Duration{}
		deadline := time.Now().Add(nd + aw/2)
		for len(back) < 2 {
			d, err := f.next("member-1", c, deadline)
			if err != nil || d == nil {
				break
			}
			mid := string(d.d.Message().Payload)
			if _, seen := back[mid]; !seen {
				back[mid] = d.at.Sub(nakAt[mid])
			}
			_ = f.settle("member-1", "ack", d.d, d.d.Ack)
		}
		f.ev.Figure("declared nak delay", nd.Seconds(), "s")
		return func() {
			expect(errP).NotTo(gomega.HaveOccurred(), "nak")
			expect(errD).NotTo(gomega.HaveOccurred(), "nak with delay")
			bp, okP := back[plain]
			expect(okP).To(gomega.BeTrue(), "a nak must redeliver; the nak'd message did not come back within %s", nd+aw/2)
			f.ev.Figure("plain nak redelivered after", bp.Seconds(), "s")
			expect(bp).To(gomega.BeNumerically("<", aw/2), "a nak must redeliver as soon as possible, not wait for the ack wait; it came back after %.3fs", bp.Seconds())
			bd, okD := back[delayed]
			expect(okD).To(gomega.BeTrue(), "a nak with delay %s must redeliver after the delay; nothing came within %s", nd, nd+aw/2)
			f.ev.Figure("delayed nak redelivered after", bd.Seconds(), "s")
			expect(bd).To(gomega.BeNumerically(">=", nd-tol/5), "a nak with delay %s came back after %.3fs, before the delay", nd, bd.Seconds())
			f.ev.Notef("nak: back after %.3fs; nak with delay %s: back after %.3fs", bp.Seconds(), nd, bd.Seconds())
		}
	})

	p.add("BR-2.5", func(w Windows, _ mq.Capabilities) time.Duration { return 2 * w.AckWait }, func(f *fixture) judge {
		return settledStaysSettled(f, "term", func(d mq.Delivery) func(context.Context) error { return d.Term }, 2,
			"term", "term must stop redelivery for good", "two ack waits", "term")
	})

	p.add("BR-2.6", func(w Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, func(f *fixture) judge {
		aw, max := f.w.AckWait, f.w.MaxDeliver
		id := f.name("m")
		topic, group, c, err := f.setup(mq.ConsumerConfig{AckWait: aw, MaxDeliver: max}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		var signals <-chan string
		watcher, canWatch := f.b.(mq.MaxDeliverWatcher)
		if canWatch {
			if signals, err = watcher.WatchMaxDeliver(f.ctx, topic, group); err != nil {
				return f.failed(err, "subscribing to the max-deliver signal")
			}
		}
		// Nak each attempt so the attempts come at once; then watch one
		// ack wait more for an attempt beyond the limit.
		var attempts []int
		deadline := time.Now().Add(aw)
		for {
			d, err := f.next("member-1", c, deadline)
			if err != nil {
				return f.failed(err, "fetching")
			}
			if d == nil {
				break
			}
			attempts = append(attempts, d.d.Attempt())
			_ = f.settle("member-1", "nak", d.d, func(ctx ctxT) error { return d.d.Nak(ctx, 0) })
			deadline = time.Now().Add(aw)
			if len(attempts) > max+2 {
				break
			}
		}
		var signal string
		if canWatch {
			select {
			case signal = <-signals:
				f.rec.Note("broker", "max-deliver signal", "pos="+signal, "")
			case <-time.After(aw / 2):
			}
		}
		f.ev.Figure("declared max deliver", max, "")
		f.ev.Figure("deliveries seen", len(attempts), "")
		return func() {
			f.ev.Notef("attempts seen: %v", attempts)
			expect(len(attempts)).To(gomega.BeNumerically("<=", max), "no delivery beyond max-deliver %d; attempts seen %v", max, attempts)
			expect(len(attempts)).To(gomega.Equal(max), "a nak'd message must be delivered up to max-deliver %d times; attempts seen %v", max, attempts)
			if !canWatch {
				spec.Unknown("deliveries stopped at %d, but the adapter exposes no max-deliver signal to observe", max)
			}
			expect(signal).NotTo(gomega.BeEmpty(), "the broker's max-deliver signal (advisory) must be observed")
		}
	})

	p.add("BR-2.7", func(w Windows, _ mq.Capabilities) time.Duration { return w.AckWait * 16 / 10 }, func(f *fixture) judge {
		aw, tol := f.w.AckWait, f.w.Tolerance
		id := f.name("m")
		_, _, c, err := f.setup(mq.ConsumerConfig{AckWait: aw}, id)
		if err != nil {
			return f.failed(err, "setting up")
		}
		first, err := f.next("member-1", c, time.Now().Add(aw))
		if err != nil || first == nil {
			return f.failed(fmt.Errorf("no first delivery: %v", err), "first delivery")
		}
		f.sleepUntil(first.at.Add(aw * 6 / 10))
		ipErr := f.settle("member-1", "in-progress", first.d, first.d.InProgress)
		ipAt := time.Now()
		again, err := f.next("member-1", c, ipAt.Add(aw+3*tol))
		if again != nil {
			_ = f.settle("member-1", "ack", again.d, again.d.Ack)
		}
		return func() {
			expect(err).NotTo(gomega.HaveOccurred(), "fetching")
			expect(ipErr).NotTo(gomega.HaveOccurred(), "in-progress")
			if again == nil {
				spec.Unknown("no redelivery at all within %s after in-progress, so the pushed-back deadline could not be located", aw+3*tol)
			}
			since := again.at.Sub(first.at)
			f.ev.Figure("redelivered after first delivery", since.Seconds(), "s")
			f.ev.Figure("redelivered after in-progress", again.at.Sub(ipAt).Seconds(), "s")
			expect(since).To(gomega.BeNumerically(">", aw+tol),
				"in-progress at %.2fs must push the deadline back; the message came back after %.3fs, at the original ack wait %s", (aw * 6 / 10).Seconds(), since.Seconds(), aw)
			expect(again.at.Sub(ipAt)).To(gomega.BeNumerically(">=", aw-tol), "redelivered %.3fs after in-progress, earlier than one ack wait", again.at.Sub(ipAt).Seconds())
			f.ev.Notef("in-progress at %.2fs pushed the deadline back: redelivered after %.3fs, %.3fs after the in-progress (ack wait %s)",
				(aw * 6 / 10).Seconds(), since.Seconds(), again.at.Sub(ipAt).Seconds(), aw)
		}
	})

	p.add("BR-2.8", func(Windows, mq.Capabilities) time.Duration { return 0 }, func(f *fixture) judge {
		aw := f.w.AckWait
		type row struct {
			retention mq.Retention
			before    int
			after     int
			err       error
		}
		var rows []row
		for _, r := range []mq.Retention{mq.Limits, mq.WorkQueue} {
			if !slices.Contains(f.t.Caps.Retentions, r) {
				f.ev.Notef("%s retention not measured: the target does not declare it", r)
				continue
			}
			rw := row{retention: r}
			rw.before, rw.after, rw.err = f.ackThenRead(r, aw)
			rows = append(rows, rw)
		}
		return func() {
			if len(rows) == 0 {
				spec.NotApplicable("the target declares neither limits nor work-queue retention")
			}
			for _, rw := range rows {
				expect(rw.err).NotTo(gomega.HaveOccurred(), "%s retention", rw.retention)
				f.ev.Figure(fmt.Sprintf("%s: stored after ack", rw.retention), rw.after, "")
				f.ev.Notef("%s retention: %d stored before the ack, %d after", rw.retention, rw.before, rw.after)
				expect(rw.before).To(gomega.Equal(1), "%s retention: the message must be stored before the ack", rw.retention)
				if rw.retention == mq.Limits {
					expect(rw.after).To(gomega.Equal(1), "under limits retention an ack is not a delete: the message must stay readable")
				} else {
					expect(rw.after).To(gomega.Equal(0), "under work-queue retention the ack must remove the message")
				}
			}
		}
	})
}

// ackThenRead publishes one message on a topic with retention r, consumes
// and acks it, and counts what the topic stores before and after.
func (f *fixture) ackThenRead(r mq.Retention, aw time.Duration) (before, after int, err error) {
	topic, err := f.topic(string(r), mq.TopicConfig{Retention: r})
	if err != nil {
		return 0, 0, err
	}
	id := f.name("m")
	if _, err := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte("E9")}); err != nil {
		return 0, 0, err
	}
	if before, _, err = f.copies(topic, id); err != nil {
		return 0, 0, err
	}
	c, err := f.consumer(topic, f.name("g"), mq.ConsumerConfig{AckWait: aw})
	if err != nil {
		return 0, 0, err
	}
	d, err := f.next("member-1", c, time.Now().Add(aw))
	if err != nil || d == nil {
		return before, 0, fmt.Errorf("no delivery: %v", err)
	}
	if err := f.settle("member-1", "ack", d.d, d.d.Ack); err != nil {
		return before, 0, err
	}
	// A work queue removes the message as the ack is processed; give the
	// removal a short moment before concluding it did not happen.
	for i := 0; i < 10; i++ {
		if after, _, err = f.copies(topic, id); err != nil || after == 0 || r == mq.Limits {
			return before, after, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return before, after, nil
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
		return f.failed(fmt.Errorf("no first delivery: %v", err), "first delivery")
	}
	settleErr := f.settle("member-1", action, first.d, settle(first.d))
	watch := time.Duration(waits) * aw
	again, err := f.next("member-1", c, first.at.Add(watch))
	f.ev.Figure("watched for", watch.Seconds(), "s")
	return func() {
		expect(err).NotTo(gomega.HaveOccurred(), "watching for a redelivery")
		expect(settleErr).NotTo(gomega.HaveOccurred(), settleMsg)
		if again != nil {
			expect(again).To(gomega.BeNil(), "%s; the message came back after %.3fs (attempt %d)", stopMsg,
				again.at.Sub(first.at).Seconds(), again.d.Attempt())
		}
		f.ev.Notef("no redelivery in %s (%s) after %s", watch, watchedFor, after)
	}
}
