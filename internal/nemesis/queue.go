package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/internal/checker"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Workload sizes and pacing of the runs under fault.
type Workload struct {
	Messages int           // published in all (default 1000)
	AckWait  time.Duration // consumer ack wait (default 1s)
	// FaultAfter is the point of the workload where the fault falls: after
	// this many acknowledged publishes (default a third of Messages).
	FaultAfter int
	Hold       time.Duration // how long the fault lasts (default 2s)
	Replicas   int           // of the topic (default 1)
	NakRate    float64       // share of deliveries nak'ed (default 0.05)
	CrashEvery int           // the consumer crashes every N fetches (default 25)
	Drain      time.Duration // how long to wait for the last deliveries (default 30s)
}

func (w Workload) withDefaults() Workload {
	if w.Messages <= 0 {
		w.Messages = 1000
	}
	if w.AckWait <= 0 {
		w.AckWait = time.Second
	}
	if w.FaultAfter <= 0 {
		w.FaultAfter = w.Messages / 3
	}
	if w.Hold <= 0 {
		w.Hold = 2 * time.Second
	}
	if w.Replicas <= 0 {
		w.Replicas = 1
	}
	if w.NakRate == 0 {
		w.NakRate = 0.05
	}
	if w.CrashEvery <= 0 {
		w.CrashEvery = 25
	}
	if w.Drain <= 0 {
		w.Drain = 30 * time.Second
	}
	return w
}

// Survival is what one fault did to a workload: the total-queue verdict of
// the run with the fault in it, and what the stored topic held afterwards.
type Survival struct {
	Fault checker.Queue `json:"queue"`
	Kind  string        `json:"fault"`
	// StoredAfter is how many of the acknowledged ids the topic stores once
	// the fault is healed (read back authoritatively).
	StoredAfter int `json:"storedAfter"`
	// MissingAfter are acknowledged ids the topic no longer stores.
	MissingAfter []string `json:"missingAfter,omitempty"`
	// Undelivered are acknowledged publishes never delivered to the group:
	// BR-2.9's lost messages.
	Undelivered []string `json:"undelivered,omitempty"`
	// Unconfirmed were delivered, but no ack of theirs was ever confirmed.
	Unconfirmed []string `json:"unconfirmed,omitempty"`
	// Stalls counts the times the consumer got nothing for three ack waits
	// while acknowledged messages were owed, and was reopened.
	Stalls int `json:"stalls"`
}

// Lost says whether anything acknowledged was lost, either way.
func (s Survival) Lost() bool {
	return len(s.Undelivered) > 0 || len(s.Fault.Unexpected) > 0 || len(s.MissingAfter) > 0
}

// Evidence writes the figures and the timeline of one run into ev.
func (s Survival) Evidence(ev *verdict.Evidence, rec *history.Recorder) {
	q := s.Fault
	p := s.Kind + ": "
	ev.Figure(p+"published", q.Attempted, "messages")
	ev.Figure(p+"acknowledged", q.Acked, "messages")
	ev.Figure(p+"indeterminate", q.Info, "messages")
	ev.Figure(p+"recovered", len(q.Recovered), "messages")
	ev.Figure(p+"lost (acknowledged, never delivered)", len(s.Undelivered), "messages")
	ev.Figure(p+"delivered, ack never confirmed", len(s.Unconfirmed), "messages")
	ev.Figure(p+"unexpected", len(q.Unexpected), "messages")
	ev.Figure(p+"duplicate deliveries", q.Duplicates, "deliveries")
	ev.Figure(p+"acknowledged and stored after heal", s.StoredAfter, "messages")
	ev.Figure(p+"acknowledged and missing after heal", len(s.MissingAfter), "messages")
	ev.Figure(p+"consumer stalls (member reopened)", s.Stalls, "stalls")
	if s.Stalls > 0 {
		ev.Hazard("%s: a consumer member got no deliveries for three ack waits while acknowledged messages were owed, %d time(s); a new member got them", s.Kind, s.Stalls)
	}
	if rec != nil {
		ev.Record(rec.Ops())
	}
}

// Broken is where a fault falls: the workload calls it once, at the point
// chosen by Workload.FaultAfter, and carries on while it runs (it injects,
// holds and heals).
type Broken func(ctx context.Context) error

// QueueUnderFault runs the BR-2.9 workload (publishes, a consumer group with
// random naks, consumer crashes and reconnects) with fault inside it, then
// checks the history with the total-queue checker and reads the topic back:
// acknowledged publishes must all be delivered (lost = 0), nothing
// unexpected, and all still stored.
func QueueUnderFault(ctx context.Context, b mq.Broker, topic, kind string, w Workload, rec *history.Recorder, fault Broken) (Survival, error) {
	w = w.withDefaults()
	s := Survival{Kind: kind}
	if err := b.CreateTopic(ctx, topic, mq.TopicConfig{Retention: mq.Limits, Replicas: w.Replicas}); err != nil {
		return s, fmt.Errorf("create topic: %w", err)
	}
	defer b.DeleteTopic(context.WithoutCancel(ctx), topic)
	cfg := mq.ConsumerConfig{Group: "nemesis", AckWait: w.AckWait}

	var acked atomic.Int64
	var ackedIDs sync.Map
	faultDone := make(chan error, 1)
	var faultOnce sync.Once
	pctx, stopProducer := context.WithCancel(ctx)
	defer stopProducer()
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		// A broker that has refused every publish for giveUp has lost the
		// topic (a memory stream after a kill): stop producing instead of
		// spending each remaining message's timeout on it.
		const giveUp = 20 * time.Second
		lastOK := time.Now()
		for i := 0; i < w.Messages && pctx.Err() == nil; i++ {
			if time.Since(lastOK) > giveUp {
				rec.Note("producer", "give up", "", fmt.Sprintf("every publish refused for %s; %d messages not sent", giveUp, w.Messages-i))
				break
			}
			id := fmt.Sprintf("m-%05d", i)
			h := rec.Invoke("producer", checker.Enqueue, id)
			octx, cancel := context.WithTimeout(pctx, 2*time.Second)
			_, err := b.Publish(octx, topic, mq.Message{ID: id, Payload: []byte(id)})
			cancel()
			if err != nil {
				// A publish whose reply never came may have been stored:
				// indeterminate, never counted as a failure.
				h.Info(err.Error())
				time.Sleep(20 * time.Millisecond)
			} else {
				h.OK("")
				lastOK = time.Now()
				ackedIDs.Store(id, true)
				if acked.Add(1) == int64(w.FaultAfter) {
					faultOnce.Do(func() { go func() { faultDone <- fault(ctx) }() })
				}
			}
		}
	}()

	// The consumer: fetch, nak some, ack the rest; crash every so often
	// (close without settling a batch) and come back as a new member.
	rng := rand.New(rand.NewPCG(1, 2))
	var member mq.Consumer
	closeMember := func() {
		if member != nil {
			_ = member.Close()
			member = nil
		}
	}
	defer closeMember()
	fetches := 0
	lastProgress := time.Now()
	lastDelivery := time.Now()
	delivered := map[string]bool{}
	// finished: the producer is done, the fault fell and healed, and every
	// acknowledged id was delivered; or nothing new came for the drain time.
	finished := func() bool {
		select {
		case <-producerDone:
		default:
			return false
		}
		if owed(&ackedIDs, delivered) == 0 && faultFinished(faultDone, &s) {
			return true
		}
		if time.Since(lastProgress) > w.Drain {
			rec.Note("consumer", "drain", "", "gave up waiting for more deliveries")
			return true
		}
		return false
	}
	for {
		if member == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := b.Consumer(cctx, topic, cfg)
			cancel()
			if err != nil {
				rec.Note("consumer", "reconnect", "", "error: "+err.Error())
				if ctx.Err() != nil {
					return s, ctx.Err()
				}
				if finished() {
					break
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			member = c
		}
		// Every call on the broker is bounded: after a fault a call on a
		// half-dead connection can block far longer than its own wait.
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ds, err := member.Fetch(fctx, 50, 500*time.Millisecond)
		cancel()
		fetches++
		if err != nil {
			rec.Note("consumer", "fetch", "", "error: "+err.Error())
			closeMember()
			time.Sleep(100 * time.Millisecond)
		}
		if len(ds) > 0 {
			lastDelivery = time.Now()
		} else if member != nil && time.Since(lastDelivery) > 3*w.AckWait && owed(&ackedIDs, delivered) > 0 {
			// Acknowledged messages are owed and nothing came for three ack
			// waits: seen after a SIGKILL of nats-server, where a member
			// whose connection reconnected got no more deliveries while a
			// new connection did. Counted, and the member is reopened.
			s.Stalls++
			rec.Note("consumer", "stall", fmt.Sprintf("%d owed", owed(&ackedIDs, delivered)), "no delivery for 3 ack waits; member reopened")
			closeMember()
			lastDelivery = time.Now()
			continue
		}
		if fetches%w.CrashEvery == 0 && len(ds) > 0 {
			rec.Note("consumer", "crash", fmt.Sprintf("%d unsettled", len(ds)), "closed before settling")
			closeMember()
			continue
		}
		for _, d := range ds {
			if member == nil {
				break
			}
			id := d.Message().ID
			if rng.Float64() < w.NakRate {
				nctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_ = d.Nak(nctx, 0)
				cancel()
				continue
			}
			if !delivered[id] {
				delivered[id] = true
				lastProgress = time.Now()
			}
			h := rec.Invoke("consumer", checker.Dequeue, id)
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := d.Ack(actx)
			cancel()
			if err != nil {
				// Not confirmed: the broker will redeliver; not a dequeue.
				// After a restart nats-server drops, with no reply, an ack
				// past the delivery pointer it restored (its consumer state
				// is flushed asynchronously, so a SIGKILL loses the last
				// deliveries' record): every other ack of this batch would
				// wait out the same silence, 2 s each, while the stream's
				// redeliveries wait for a fetch. The batch is left to
				// redelivery and the member reopened.
				h.Info(err.Error())
				rec.Note("consumer", "ack", id, "unconfirmed; the rest of the batch left to redelivery, member reopened")
				closeMember()
				break
			}
			h.OK(fmt.Sprintf("attempt %d", d.Attempt()))
		}
		if finished() {
			break
		}
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
	}
	if err := waitFault(ctx, faultDone, &s); err != nil {
		return s, err
	}
	s.Fault = checker.TotalQueue(rec.Ops())
	stored, err := b.ReadAll(ctx, topic)
	if err != nil {
		// A topic that cannot be read back holds nothing the kit can show:
		// every acknowledged message counts as missing.
		rec.Note("reader", "read back", topic, "error: "+err.Error())
		stored = nil
	}
	s.StoredAfter, s.MissingAfter = storedAcked(rec.Ops(), stored)
	// BR-2.9's "lost" is acknowledged and never delivered. The checker's
	// Lost also holds deliveries whose ack the broker never confirmed (the
	// confirmation can be lost in the fault, while the ack took effect and
	// ended redelivery); those were delivered, and are counted apart.
	for _, id := range s.Fault.Lost {
		if delivered[id] {
			s.Unconfirmed = append(s.Unconfirmed, id)
		} else {
			s.Undelivered = append(s.Undelivered, id)
		}
	}
	return s, nil
}

// owed counts acknowledged ids not delivered yet.
func owed(acked *sync.Map, delivered map[string]bool) int {
	n := 0
	acked.Range(func(k, _ any) bool {
		if !delivered[k.(string)] {
			n++
		}
		return true
	})
	return n
}

// faultFinished reports whether the fault already ran; a workload never
// ends before its fault fell and healed.
func faultFinished(ch chan error, s *Survival) bool {
	select {
	case err := <-ch:
		ch <- err
		return true
	default:
		return false
	}
}

func waitFault(ctx context.Context, ch chan error, s *Survival) error {
	select {
	case err := <-ch:
		if err != nil {
			return fmt.Errorf("fault %s: %w", s.Kind, err)
		}
		return nil
	case <-ctx.Done():
		return errors.New("the fault never fell: the workload ended before its fault point")
	}
}

// storedAcked counts the acknowledged enqueues the topic stores.
func storedAcked(ops []history.Op, stored []mq.Stored) (int, []string) {
	have := map[string]bool{}
	for _, m := range stored {
		have[m.Message.ID] = true
	}
	n := 0
	var missing []string
	for _, op := range ops {
		if op.Action == checker.Enqueue && op.Outcome == history.OK {
			if have[op.Value] {
				n++
			} else {
				missing = append(missing, op.Value)
			}
		}
	}
	return n, missing
}
