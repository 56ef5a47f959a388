package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/mq"
)

// The BR-7 rules check what RabbitMQ's acknowledgement words say and a
// client easily reads wrong (seed 002, section 六): a publisher confirm is
// "handled", so a mandatory message nothing routes comes back (basic.return)
// and is then confirmed positively (BR-7.1); a basic.nack is a refusal
// (BR-7.2); a quorum queue's delivery limit hands the message to the
// declared dead-letter exchange (BR-7.3); consumer_timeout takes a held
// delivery back by closing the holder's channel (BR-7.4). The kit drives
// them through the optional interfaces of mq (confirm.go); a target that
// declares the capability without the interface fails: it says what it
// does not do.

func registerRabbit(p *plan) {
	zero := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }
	p.set.Background("BR-7.1", p.workload("BR-7.1", zero, mandatoryReturned))
	p.set.Background("BR-7.2", p.workload("BR-7.2", zero, nackNotStored))
	p.set.Background("BR-7.3", p.workload("BR-7.3", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, deadLettered))
	p.set.Background("BR-7.4", p.workload("BR-7.4", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return 2*w.AckWait + 3*w.Tolerance }, heldPastTimeout))
	p.set.Background("BR-7.5", p.workload("BR-7.5", zero, namedProducerDedupe))
}

// rabbitCaps maps what the target declares to the BR-7 capabilities.
func rabbitCaps(t target) []catalog.Capability {
	c := t.Caps
	var out []catalog.Capability
	for _, x := range []struct {
		ok bool
		cp catalog.Capability
	}{
		{c.ConsumerTimeout, catalog.CapBrokerConsumerTimeout},
		{c.NamedProducerDedupe, catalog.CapBrokerStreamDedupe},
	} {
		if x.ok {
			out = append(out, x.cp)
		}
	}
	return out
}

// missingInterface is the judge of a rule whose handle does not implement
// the interface it drives: not-applicable, naming it (a declared flag such
// as atomicBatch cannot stand in for the mechanism).
func missingInterface(f *fixture, capability, iface string) judge {
	return func(r *spec.R) {
		r.NotApplicable("the target declares %s but its handle (%T) does not implement %s", capability, f.b, iface)
	}
}

// mandatoryReturned is BR-7.1: a routable publish first (it must be
// stored: the topic works), then a mandatory publish under a routing key
// nothing binds, which must be reported returned, and must not be stored.
func mandatoryReturned(f *fixture) judge {
	up, ok := f.b.(mq.UnroutablePublisher)
	if !ok {
		return missingInterface(f, "mandatory returns", "mq.UnroutablePublisher")
	}
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	routed, lost := f.name("routed"), f.name("unroutable")
	if _, err := f.publish("producer", topic, mq.Message{ID: routed, Payload: []byte("E9")}); err != nil {
		return f.failed(err, "the routable publish")
	}
	h := f.rec.Invoke("producer", "publish-unroutable", fmt.Sprintf("%s id=%s (mandatory, a routing key nothing binds)", topic, lost))
	ack, pubErr := up.PublishUnroutable(f.ctx, topic, mq.Message{ID: lost, Payload: []byte("E9 unroutable")})
	switch {
	case pubErr == nil:
		h.OK(describeAck(ack))
	case errors.Is(pubErr, mq.ErrReturned):
		h.OK("returned: " + oneLine(pubErr.Error()))
	default:
		h.Info(pubErr.Error())
	}
	nRouted, _, errRouted := f.copies(topic, routed)
	nLost, _, errLost := f.copies(topic, lost)
	return func(r *spec.R) {
		f.must(r, errRouted, "reading the topic back")
		r.Expect(nRouted).To(gomega.Equal(1), "the routable publish was confirmed, so the topic must hold it once; it holds %d", nRouted)
		if pubErr != nil && !errors.Is(pubErr, mq.ErrReturned) {
			f.unknown(r, "the unroutable publish ended with an error that is not the broker's return, so what the client would have reported is unknown: %s", oneLine(pubErr.Error()))
		}
		r.Expect(pubErr).To(gomega.HaveOccurred(), "a mandatory publish nothing routes comes back (basic.return) before its positive confirm; the client reported it stored (%s): no queue holds it", describeAck(ack))
		f.must(r, errLost, "reading the topic back")
		r.Ev.Figure("stored copies of the returned message", nLost, "")
		r.Expect(nLost).To(gomega.BeZero(), "a returned message is in no queue; the topic holds %d copies of %s", nLost, lost)
		r.Ev.Notef("the routable publish was stored; the unroutable one was reported returned: %s", oneLine(pubErr.Error()))
	}
}

// boundedPublishes is how many publishes BR-7.2 makes into a queue of
// room for one: a quorum queue checks its limit as it applies a publish,
// so one or two more get in before it refuses.
const boundedPublishes = 6

// boundedRoom is the most a queue of room for one can hold under those
// publishes: the one, and the two a quorum queue lets past its limit.
const boundedRoom = 3

// nackNotStored is BR-7.2: publishes into a queue that refuses overflow,
// each reported stored, refused or unknown; then the queue is drained. A
// publish reported stored must be delivered; at least one must have been
// refused for the rule to have been exercised.
func nackNotStored(f *fixture) judge {
	bt, ok := f.b.(mq.BoundedTopics)
	if !ok {
		return missingInterface(f, "negative confirms", "mq.BoundedTopics")
	}
	topic := f.name("bounded")
	if err := f.kitStep("create-bounded-topic", topic+" max=1 (refuses overflow)", func() error { return bt.CreateBoundedTopic(f.ctx, topic, 1) }); err != nil {
		return f.failed(err, "creating the bounded topic")
	}
	f.defer_(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.b.DeleteTopic(ctx, topic)
	})
	var stored, refused, unsureIDs []string
	for i := range boundedPublishes {
		id := fmt.Sprintf("%s-%d", topic, i)
		h := f.rec.Invoke("producer", "publish", fmt.Sprintf("%s id=%s", topic, id))
		ack, err := f.b.Publish(f.ctx, topic, mq.Message{ID: id, Payload: []byte(id)})
		switch {
		case err == nil:
			h.OK(describeAck(ack))
			stored = append(stored, id)
		case errors.Is(err, mq.ErrNacked):
			h.OK("refused: " + oneLine(err.Error()))
			refused = append(refused, id)
		default:
			h.Info(err.Error())
			unsureIDs = append(unsureIDs, id)
		}
	}
	c, err := f.consumer(topic, f.name("g"), mq.ConsumerConfig{AckWait: f.w.AckWait})
	if err != nil {
		return f.failed(err, "opening a consumer")
	}
	var delivered []string
	var drainErr error
	for {
		d, err := f.next("member-1", c, time.Now().Add(f.w.AckWait/2))
		if err != nil {
			drainErr = err
			break
		}
		if d == nil {
			break
		}
		delivered = append(delivered, d.d.Message().ID)
		_ = f.settle("member-1", "ack", d.d, d.d.Ack)
		if len(delivered) > boundedPublishes {
			break
		}
	}
	return func(r *spec.R) {
		r.Ev.Figure("reported stored", len(stored), "")
		r.Ev.Figure("reported refused", len(refused), "")
		r.Ev.Figure("delivered from the queue", len(delivered), "")
		r.Ev.Notef("reported stored %v; refused %v; outcome unknown %v; delivered %v", stored, refused, unsureIDs, delivered)
		f.must(r, drainErr, "draining the queue")
		var missing []string
		for _, id := range stored {
			if !slices.Contains(delivered, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			// Not delivered within the drain is a deadline missed; more
			// reported stored than the queue has room for is impossible.
			if len(stored) > boundedRoom {
				f.prove("checker", "drain", topic, fmt.Sprintf("the client reported %d of %d publishes stored into a queue of room for one that no consumer read meanwhile (a quorum queue lets at most %d in as it applies them), and %v never came out of it: the broker refused them (basic.nack) and the client reported them stored",
					len(stored), boundedPublishes, boundedRoom, missing))
			}
			f.missed(r, "every publish the client reported stored must be in the queue; %v did not come out of it within %s", missing, f.w.AckWait/2)
		}
		for _, id := range refused {
			if slices.Contains(delivered, id) {
				r.Ev.Notef("%s was refused by a negative confirm and delivered all the same: a nack says the broker did not take responsibility, not that no queue got it", id)
			}
		}
		if len(refused) == 0 {
			f.unknown(r, "the queue of room for one refused none of %d publishes, so no negative confirm was seen and the rule was not exercised", boundedPublishes)
		}
	}
}

// deadLettered is BR-7.3: a group with max-deliver N; its one message is
// nack'd with requeue at each delivery until none comes; the message must
// have been delivered N times and then be in the dead-letter queue with
// reason delivery_limit.
func deadLettered(f *fixture) judge {
	dr, ok := f.b.(mq.DeadLetterReader)
	if !ok {
		return missingInterface(f, "dead letters", "mq.DeadLetterReader")
	}
	aw, max := f.w.AckWait, f.w.MaxDeliver
	id := f.name("m")
	topic, group, c, err := f.setup(mq.ConsumerConfig{AckWait: aw, MaxDeliver: max}, id)
	if err != nil {
		return f.failed(err, "setting up")
	}
	var attempts []int
	for len(attempts) <= max+2 {
		d, err := f.next("member-1", c, time.Now().Add(aw))
		if err != nil {
			return f.failed(err, "fetching")
		}
		if d == nil {
			break
		}
		attempts = append(attempts, d.d.Attempt())
		_ = f.settle("member-1", "nak", d.d, func(ctx ctxT) error { return d.d.Nak(ctx, 0) })
	}
	// Dead-lettering follows the last return; it gets a moment.
	var found *mq.DeadLetter
	var readErr error
	start := time.Now()
	for found == nil && stall.Scheduled(start, time.Now()) < aw && f.ctx.Err() == nil {
		h := f.rec.Invoke("checker", "dead-letters", topic+" group="+group)
		dls, err := dr.DeadLetters(f.ctx, topic, group)
		readErr = err
		if err != nil {
			h.Info(err.Error())
			if errors.Is(err, mq.ErrNotFound) {
				break
			}
		} else {
			h.OK(fmt.Sprintf("%d dead-lettered", len(dls)))
			for i := range dls {
				if dls[i].Message.ID == id {
					found = &dls[i]
				}
			}
		}
		if found == nil {
			f.pause(50 * time.Millisecond)
		}
	}
	return func(r *spec.R) {
		r.Ev.Figure("declared max deliver", max, "")
		r.Ev.Notef("attempts seen: %v", attempts)
		r.Expect(len(attempts)).To(gomega.BeNumerically("<=", max), "a message nack'd with requeue at every delivery must be delivered max-deliver %d times, then no more; attempts seen %v", max, attempts)
		if len(attempts) < max {
			// The dead letters were read above: what they hold decides.
			if found != nil && found.Reason != "delivery_limit" && !f.hasProof() {
				f.provedEarly(id, found.Reason, len(attempts), max)
			}
			f.missed(r, "a message nack'd with requeue at every delivery must be delivered max-deliver %d times; no redelivery came within %s of delivery %d (attempts seen %v)", max, aw, len(attempts), attempts)
		}
		if readErr != nil && !errors.Is(readErr, mq.ErrNotFound) && found == nil {
			f.unknown(r, "the dead-letter queue could not be read, so where the message went is unknown: %s", oneLine(readErr.Error()))
		}
		if found == nil && !errors.Is(readErr, mq.ErrNotFound) {
			f.missed(r, "after %d deliveries the message reached the delivery limit; it must be in the declared dead-letter queue, and it was not there within %s", len(attempts), aw)
		}
		r.Expect(found).NotTo(gomega.BeNil(), "after %d deliveries the message reached the delivery limit; it must be in the declared dead-letter queue, and there is none (%v): it was dropped silently", len(attempts), readErr)
		r.Ev.Figure("dead-letter reason", found.Reason, "")
		r.Expect(found.Reason).To(gomega.Equal("delivery_limit"), "the dead-letter's x-death reason")
		r.Expect(string(found.Message.Payload)).To(gomega.Equal("body of "+id), "the dead-lettered message's body")
		r.Ev.Notef("after %d deliveries %s was dead-lettered from %s, reason %s", len(attempts), id, found.Queue, found.Reason)
	}
}

// heldPastTimeout is BR-7.4: member-1 takes a delivery and holds it past
// the ack wait (the node's consumer_timeout) by three tolerances, then
// acks it: the ack must fail (the server closed the channel and put the
// message back), and the message must come again with its attempt one
// higher.
func heldPastTimeout(f *fixture) judge {
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
	f.sleepUntil(first.at.Add(aw + 3*tol))
	held := time.Since(first.at)
	h := f.rec.Invoke("member-1", "ack (late)", "id="+id)
	ackErr := first.d.Ack(f.ctx)
	if ackErr != nil {
		h.OK("not taken: " + oneLine(ackErr.Error()))
	} else {
		h.OK("reported confirmed")
	}
	again, againErr := f.next("member-1", c, time.Now().Add(aw))
	if again != nil {
		_ = f.settle("member-1", "ack", again.d, again.d.Ack)
	}
	return func(r *spec.R) {
		r.Ev.Figure("held for", held.Seconds(), "s")
		r.Ev.Figure("consumer_timeout (ack wait)", aw.Seconds(), "s")
		if again == nil {
			f.must(r, unsure("fetching the redelivery", againErr), "fetching")
		}
		if again == nil {
			f.missed(r, "a delivery held %.3fs, past consumer_timeout %s, must be redelivered; nothing came within %s", held.Seconds(), aw, aw)
		}
		r.Expect(string(again.d.Message().Payload)).To(gomega.Equal("body of "+id), "the redelivery is another message")
		r.Expect(again.d.Attempt()).To(gomega.Equal(first.d.Attempt()+1), "the redelivery's attempt number must be one higher than the first (%d)", first.d.Attempt())
		r.Expect(ackErr).To(gomega.HaveOccurred(), "the ack of a delivery held past consumer_timeout was reported confirmed, yet the server had closed the channel and the message came back (attempt %d): a consumer that trusts such an ack processes the message twice", again.d.Attempt())
		r.Ev.Notef("held %.3fs (consumer_timeout %s); the late ack failed (%s); redelivered with attempt %d", held.Seconds(), aw, oneLine(ackErr.Error()), again.d.Attempt())
	}
}

// namedProducerDedupe is BR-7.5: producer p publishes 1, 2, 3 and closes
// (a restart); a new p re-sends 2 and 3 (retries of publishes whose
// confirm it never saw) and sends 4. Each of the four must be stored
// once; the duplicates' confirms cannot say they were dropped, so the
// topic is read back.
func namedProducerDedupe(f *fixture) judge {
	np, ok := f.b.(mq.NamedProducers)
	if !ok {
		return missingInterface(f, "stream de-dupe (namedProducerDedupe)", "mq.NamedProducers")
	}
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	name := f.name("p")
	payload := func(seq int64) string { return fmt.Sprintf("%s-E%d", topic, seq) }
	run := func(actor string, seqs ...int64) error {
		var p mq.SequencedProducer
		if err := f.kitStep("start-producer", actor+" name="+name, func() (err error) {
			p, err = np.NamedProducer(f.ctx, topic, name)
			return err
		}); err != nil {
			return err
		}
		defer p.Close()
		for _, seq := range seqs {
			h := f.rec.Invoke(actor, "publish", fmt.Sprintf("%s publishing-id=%d %q", topic, seq, payload(seq)))
			ack, err := p.Publish(f.ctx, seq, mq.Message{ID: payload(seq), Payload: []byte(payload(seq))})
			if err != nil {
				h.Info(err.Error())
				return unsure(fmt.Sprintf("publishing id %d", seq), err)
			}
			h.OK(describeAck(ack))
		}
		return nil
	}
	if err := run("producer-1", 1, 2, 3); err != nil {
		return f.failed(err, "producer-1")
	}
	f.rec.Note("producer-1", "restart", name, "closed; a new producer of the same name starts")
	if err := run("producer-2", 2, 3, 4); err != nil {
		return f.failed(err, "producer-2")
	}
	counts := map[int64]int{}
	var readErr error
	for seq := int64(1); seq <= 4; seq++ {
		n, err := f.intents(topic, payload(seq))
		if err != nil {
			readErr = err
			break
		}
		counts[seq] = n
	}
	return func(r *spec.R) {
		f.must(r, readErr, "reading the topic back")
		r.Ev.Figure("stored copies of publishing ids 1..4", []int{counts[1], counts[2], counts[3], counts[4]}, "")
		for seq := int64(1); seq <= 4; seq++ {
			r.Expect(counts[seq]).To(gomega.Equal(1), "publishing id %d of producer %s must be stored once across the producer's restart; the stream holds %d copies (copies of 1..4: %d %d %d %d)",
				seq, name, counts[seq], counts[1], counts[2], counts[3], counts[4])
		}
		r.Ev.Notef("producer %s stored 1..3, restarted, re-sent 2 and 3 and sent 4: each stored once", name)
	}
}
