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
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// Workload shape of BR-2.9.
const (
	queueMembers  = 3
	queueBatch    = 25
	queueNakP     = 0.10 // a delivery is nak'd
	queueCrashP   = 0.01 // a member crashes (closes without acking its batch) and reconnects
	queueMaxCrash = 12
)

func registerQueue(p *plan) {
	p.add("BR-2.9", func(w Windows, _ mq.Capabilities) time.Duration { return w.AckWait }, totalQueue)
}

// settleTimeout bounds one ack or nak of the BR-2.9 workload. An ack whose
// confirmation does not come in this time is indeterminate: after a server
// restart or a leader change the broker may drop an ack silently (nats-server
// ignores, without a reply, an ack past its restored delivery pointer), and
// waiting for it longer only stalls the member while its batch ages.
const settleTimeout = 2 * time.Second

// totalQueue runs a producer and a group of members that nak at random and
// crash (close without acking, then reconnect as a new member), and hands
// the history to the total-queue checker. A target with Disrupt injects its
// fault in the middle of the workload.
func totalQueue(f *fixture) judge {
	aw, n := f.w.AckWait, f.w.Messages
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	group := f.name("g")
	q := history.New() // the queue history; f.rec keeps the faults
	var (
		mu       sync.Mutex
		acked    = map[string]bool{} // enqueued ok
		consumed = map[string]bool{} // dequeued ok
		pubDone  = make(chan struct{})
		crashes  int
		naks     int
		reopens  int
		lastNew  = time.Now() // the last first-time consumption
	)
	// The fault, if any, falls after a third of the publishes were acked.
	disruptDone := make(chan error, 1)
	var disruptOnce sync.Once
	disrupt := func() {
		disruptOnce.Do(func() {
			if f.t.Disrupt == nil {
				disruptDone <- nil
				return
			}
			go func() { disruptDone <- f.t.Disrupt(f.ctx, f.rule, topic, f.rec, f.ev) }()
		})
	}
	if f.t.Disrupt == nil {
		disrupt()
	}
	go func() {
		defer close(pubDone)
		nacked := 0
		for i := 0; i < n && f.ctx.Err() == nil; i++ {
			id := fmt.Sprintf("%s-q%04d", group, i)
			h := q.Invoke("producer", checker.Enqueue, id)
			ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
			ack, err := f.b.Publish(ctx, topic, mq.Message{ID: id, Payload: []byte(id)})
			cancel()
			if err != nil {
				h.Info(err.Error())
				continue
			}
			h.OK(describeAck(ack))
			mu.Lock()
			acked[id] = true
			mu.Unlock()
			if nacked++; nacked == n/3 {
				disrupt()
			}
		}
		// Too few acks to reach the fault point: the fault falls now, so
		// that the rule still runs under it.
		disrupt()
	}()
	done := func() bool {
		select {
		case <-pubDone:
		default:
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		for id := range acked {
			if !consumed[id] {
				return false
			}
		}
		return true
	}
	// The workload ends when every acked publish was consumed, or once
	// publishing ended, the fault healed, and nothing new was consumed for
	// long enough for crashed members' deliveries to come back (ack wait)
	// several times over.
	var quiet time.Time // when publishing ended and the fault healed
	var disruptErr error
	idle := 3*aw + 2*time.Second
	giveUp := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if quiet.IsZero() {
			return false
		}
		last := quiet
		if lastNew.After(last) {
			last = lastNew
		}
		return time.Since(last) > idle
	}
	// open opens a member, retrying: while a broker recovers (a restart, an
	// election) opening can fail or hang, and each try is bounded.
	open := func(actor string) mq.Consumer {
		for f.ctx.Err() == nil && !done() && !giveUp() {
			ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
			c, err := f.b.Consumer(ctx, topic, mq.ConsumerConfig{Group: group, AckWait: aw})
			cancel()
			if err == nil {
				return c
			}
			f.rec.Note(actor, "open", group, "error: "+err.Error())
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}
	var wg sync.WaitGroup
	for m := 0; m < queueMembers; m++ {
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(m)))
			gen := 0
			actor := fmt.Sprintf("member-%d.%d", m, gen)
			c := open(actor)
			defer func() {
				if c != nil {
					_ = c.Close()
				}
			}()
			// reopen replaces the member by a new one on a new connection.
			reopen := func(action, value, why string) bool {
				f.rec.Note(actor, action, value, why)
				_ = c.Close()
				gen++
				actor = fmt.Sprintf("member-%d.%d", m, gen)
				c = open(actor)
				if c != nil {
					f.rec.Note(actor, "reconnect", group, "")
				}
				return c != nil
			}
			fetchErrs := 0
			for c != nil && f.ctx.Err() == nil && !done() && !giveUp() {
				fctx, cancel := context.WithTimeout(f.ctx, aw+3*time.Second)
				ds, err := c.Fetch(fctx, queueBatch, 200*time.Millisecond)
				cancel()
				if err != nil {
					// A consumer without a leader yet (just created, or
					// during an election) answers "no responders": wait a
					// little. Three errors in a row and the member's
					// connection is in doubt (a server went away): a new
					// member, as a restarted process would.
					if fetchErrs++; fetchErrs < 3 {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					fetchErrs = 0
					mu.Lock()
					reopens++
					mu.Unlock()
					if !reopen("fetch", group, "error: "+err.Error()+"; member reopened") {
						return
					}
					continue
				}
				fetchErrs = 0
			batch:
				for _, d := range ds {
					id := d.Message().ID
					r := rng.Float64()
					switch {
					case r < queueCrashP && tryCrash(&mu, &crashes):
						if !reopen("crash", id, fmt.Sprintf("closed with %d deliveries unacked", len(ds))) {
							return
						}
						break batch
					case r < queueCrashP+queueNakP:
						mu.Lock()
						naks++
						mu.Unlock()
						ctx, cancel := context.WithTimeout(f.ctx, settleTimeout)
						_ = d.Nak(ctx, 0)
						cancel()
					default:
						h := q.Invoke(actor, checker.Dequeue, id)
						ctx, cancel := context.WithTimeout(f.ctx, settleTimeout)
						err := d.Ack(ctx)
						cancel()
						if err != nil {
							h.Info(err.Error())
							// The rest of the batch would wait out the same
							// silence one ack at a time; it is redelivered.
							mu.Lock()
							reopens++
							mu.Unlock()
							if !reopen("ack", id, "unconfirmed; the rest of the batch left to redelivery, member reopened") {
								return
							}
							break batch
						}
						h.OK(fmt.Sprintf("attempt=%d", d.Attempt()))
						mu.Lock()
						if !consumed[id] {
							lastNew = time.Now()
						}
						consumed[id] = true
						mu.Unlock()
					}
				}
			}
		}(m)
	}
	<-pubDone
	select {
	case disruptErr = <-disruptDone:
	case <-f.ctx.Done():
		disruptErr = fmt.Errorf("the fault did not heal before the rule's budget ended")
	}
	mu.Lock()
	quiet = time.Now()
	mu.Unlock()
	wg.Wait()

	ops := q.Ops()
	res := checker.TotalQueue(ops)
	// The checker's lost holds every acked publish with no confirmed ack.
	// One that was delivered and whose ack went unconfirmed (the reply was
	// lost in a fault, while the ack may have taken effect and ended its
	// redelivery) reached a consumer: not lost, counted apart.
	deliveredIDs := map[string]bool{}
	for _, op := range ops {
		if op.Action == checker.Dequeue && op.Actor != "producer" {
			deliveredIDs[op.Value] = true
		}
	}
	var lost, unconfirmed []string
	for _, id := range res.Lost {
		if deliveredIDs[id] {
			unconfirmed = append(unconfirmed, id)
		} else {
			lost = append(lost, id)
		}
	}
	f.ev.Figure("messages", n, "")
	f.ev.Figure("acked publishes", res.Acked, "")
	f.ev.Figure("indeterminate publishes", res.Info, "")
	f.ev.Figure("acked deliveries", res.Dequeued, "")
	f.ev.Figure("naks", naks, "")
	f.ev.Figure("crashes", crashes, "")
	f.ev.Figure("members reopened after an error", reopens, "")
	f.ev.Figure("lost (acked, never delivered)", len(lost), "")
	f.ev.Figure("delivered, ack never confirmed", len(unconfirmed), "")
	f.ev.Figure("unexpected", len(res.Unexpected), "")
	f.ev.Figure("duplicated", res.Duplicates, "")
	f.ev.Figure("recovered", len(res.Recovered), "")
	if len(lost) > 0 || len(res.Unexpected) > 0 {
		f.ev.Smallest(witness(ops, append(append([]string(nil), lost...), res.Unexpected...), 20))
	}
	return func() {
		f.ev.Notef("total queue: %d published (%d acked, %d unknown), %d acked deliveries of %d distinct; %d naks, %d crashes, %d members reopened after an error; lost %d (and %d delivered whose ack was never confirmed), unexpected %d, duplicated %d, recovered %d",
			res.Attempted, res.Acked, res.Info, res.Dequeued, res.Distinct, naks, crashes, reopens, len(lost), len(unconfirmed), len(res.Unexpected), res.Duplicates, len(res.Recovered))
		if errors.Is(disruptErr, ErrViolation) {
			expect(disruptErr).NotTo(gomega.HaveOccurred(), "the target's fault exposed a violation")
		}
		if res.Acked == 0 {
			spec.Unknown("no publish was acknowledged, so there was nothing to lose")
		}
		expect(res.Unexpected).To(gomega.BeEmpty(), "unexpected: delivered but never published")
		expect(lost).To(gomega.BeEmpty(), "lost: acknowledged publishes never delivered (%d of %d)", len(lost), res.Acked)
		if res.Duplicates > 0 {
			f.ev.Notef("%d duplicate deliveries (at-least-once): consumers must be idempotent", res.Duplicates)
		}
		if disruptErr != nil {
			spec.Unknown("the target's fault did not run as intended, so the run did not check what it was meant to: %v", disruptErr)
		}
	}
}

// tryCrash counts a crash unless the workload had enough of them.
func tryCrash(mu *sync.Mutex, n *int) bool {
	mu.Lock()
	defer mu.Unlock()
	if *n >= queueMaxCrash {
		return false
	}
	*n++
	return true
}

// witness keeps the operations on the first max values of ids: the
// smallest history that shows them lost or unexpected.
func witness(ops []history.Op, ids []string, max int) []history.Op {
	if len(ids) > max {
		ids = ids[:max]
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []history.Op
	for _, op := range ops {
		if want[op.Value] {
			out = append(out, op)
		}
	}
	return out
}
