package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/checker"
	"github.com/onceproof/tck/history"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/spec"
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

// totalQueue runs a producer and a group of members that nak at random and
// crash (close without acking, then reconnect as a new member), and hands
// the history to the total-queue checker.
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
	)
	go func() {
		defer close(pubDone)
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
		}
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
	// The workload ends when every acked publish was consumed, or a while
	// after publishing ended: long enough for crashed members' deliveries
	// to come back (ack wait) several times over.
	var giveUp time.Time
	var wg sync.WaitGroup
	for m := 0; m < queueMembers; m++ {
		wg.Add(1)
		go func(m int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(m)))
			gen := 0
			actor := fmt.Sprintf("member-%d.%d", m, gen)
			c, err := f.b.Consumer(f.ctx, topic, mq.ConsumerConfig{Group: group, AckWait: aw})
			if err != nil {
				f.rec.Note(actor, "open", group, "error: "+err.Error())
				return
			}
			defer func() { _ = c.Close() }()
			for f.ctx.Err() == nil && !done() {
				mu.Lock()
				stop := !giveUp.IsZero() && time.Now().After(giveUp)
				mu.Unlock()
				if stop {
					return
				}
				ds, err := c.Fetch(f.ctx, queueBatch, 200*time.Millisecond)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
			batch:
				for _, d := range ds {
					id := d.Message().ID
					r := rng.Float64()
					switch {
					case r < queueCrashP && tryCrash(&mu, &crashes):
						f.rec.Note(actor, "crash", id, fmt.Sprintf("closed with %d deliveries unacked", len(ds)))
						_ = c.Close()
						gen++
						actor = fmt.Sprintf("member-%d.%d", m, gen)
						if c, err = f.b.Consumer(f.ctx, topic, mq.ConsumerConfig{Group: group, AckWait: aw}); err != nil {
							f.rec.Note(actor, "reconnect", group, "error: "+err.Error())
							return
						}
						f.rec.Note(actor, "reconnect", group, "")
						break batch
					case r < queueCrashP+queueNakP:
						mu.Lock()
						naks++
						mu.Unlock()
						_ = d.Nak(f.ctx, 0)
					default:
						h := q.Invoke(actor, checker.Dequeue, id)
						if err := d.Ack(f.ctx); err != nil {
							h.Info(err.Error())
							continue
						}
						h.OK(fmt.Sprintf("attempt=%d", d.Attempt()))
						mu.Lock()
						consumed[id] = true
						mu.Unlock()
					}
				}
			}
		}(m)
	}
	<-pubDone
	mu.Lock()
	giveUp = time.Now().Add(3*aw + 2*time.Second)
	mu.Unlock()
	wg.Wait()

	ops := q.Ops()
	res := checker.TotalQueue(ops)
	f.ev.Figure("messages", n, "")
	f.ev.Figure("acked publishes", res.Acked, "")
	f.ev.Figure("indeterminate publishes", res.Info, "")
	f.ev.Figure("acked deliveries", res.Dequeued, "")
	f.ev.Figure("naks", naks, "")
	f.ev.Figure("crashes", crashes, "")
	f.ev.Figure("lost", len(res.Lost), "")
	f.ev.Figure("unexpected", len(res.Unexpected), "")
	f.ev.Figure("duplicated", res.Duplicates, "")
	f.ev.Figure("recovered", len(res.Recovered), "")
	if !res.Valid() {
		f.ev.Smallest(witness(ops, append(append([]string(nil), res.Lost...), res.Unexpected...), 20))
	}
	return func() {
		f.ev.Notef("total queue: %d published (%d acked, %d unknown), %d acked deliveries of %d distinct; %d naks, %d crashes; lost %d, unexpected %d, duplicated %d, recovered %d",
			res.Attempted, res.Acked, res.Info, res.Dequeued, res.Distinct, naks, crashes, len(res.Lost), len(res.Unexpected), res.Duplicates, len(res.Recovered))
		if res.Acked == 0 {
			spec.Unknown("no publish was acknowledged, so there was nothing to lose")
		}
		expect(res.Unexpected).To(gomega.BeEmpty(), "unexpected: delivered but never published")
		expect(res.Lost).To(gomega.BeEmpty(), "lost: acknowledged publishes never consumed (%d of %d)", len(res.Lost), res.Acked)
		if res.Duplicates > 0 {
			f.ev.Notef("%d duplicate deliveries (at-least-once): consumers must be idempotent", res.Duplicates)
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
