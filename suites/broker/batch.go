package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/faultproxy"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// The BR-8 rules check atomic batch publish (NATS 2.12, ADR-50): a batch is
// one intent of several messages, the broker-side cousin of the seed's
// outbox, and it must land whole and once (BR-8.1), leave nothing when its
// publisher dies before the commit (BR-8.2), and be refused whole past the
// server's size limit (BR-8.3). The kit drives them through
// mq.BatchPublisher; a target that declares the capability without it
// fails, naming the interface. A member is known by its payload, unique to
// the rule and the batch, so a client that renames ids on a retry is seen
// storing the same member twice.

// batchLacks is why the BR-8 rules do not apply on a broker that does not
// declare atomic batches, naming the interface they drive.
const batchLacks = "the broker has no atomic batch publish the kit can drive (mq.BatchPublisher; NATS: nats-server 2.12 or later, ADR-50)"

// batchesDeclared makes the BR-8 rules not-applicable under a declaration
// whose NATS streams all say allow_atomic false (the profile's allowAtomic
// absent or false): such a pipeline publishes no atomic batch, and its
// server would refuse one. A declaration without the setting (another
// broker) changes nothing.
func batchesDeclared(d *kithooks.Declared, t target) target {
	said := false
	for _, s := range d.Streams {
		switch s.Topic.Settings["allow_atomic"] {
		case "true":
			return t
		case "false":
			said = true
		}
	}
	if !said {
		return t
	}
	na := map[string]string{}
	for id, why := range t.NotApplicable {
		na[id] = why
	}
	for _, id := range []string{"BR-8.1", "BR-8.2", "BR-8.3"} {
		if _, ok := na[id]; !ok {
			na[id] = "no declared stream allows atomic batches (allowAtomic, the server's allow_atomic): the pipeline publishes none, so the batch rules check nothing of it; BR-6.1 compares the setting"
		}
	}
	t.NotApplicable = na
	return t
}

// batchAbandonWait is how long BR-8.2 waits by definition: nats-server's
// default max_batch_timeout (10 s, server/stream.go
// streamDefaultMaxBatchTimeout). A target reporting a longer one
// (mq.BatchLimits) is waited for as long, within the workload's limit.
const batchAbandonWait = 10 * time.Second

// batchWindow is the de-dupe window of BR-8.1's topic: long enough that the
// duplicates it sends across batches are inside it on a slow host.
const batchWindow = time.Minute

func registerBatch(p *plan) {
	zero := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }
	p.set.Background("BR-8.1", p.workload("BR-8.1", zero, batchWholeOnce))
	p.set.Background("BR-8.2", p.workload("BR-8.2", func(w kithooks.Windows, _ mq.Capabilities) time.Duration { return batchAbandonWait + w.Tolerance }, batchAbandoned))
	p.set.Background("BR-8.3", p.workload("BR-8.3", zero, batchLimit))
}

// batchPublisher is f's handle as an mq.BatchPublisher, or the judge of a
// target that declares atomic batches without one.
func (f *fixture) batchPublisher() (mq.BatchPublisher, judge) {
	bp, ok := f.b.(mq.BatchPublisher)
	if !ok {
		return nil, missingInterface(f, "atomic batches (atomicBatch)", "mq.BatchPublisher")
	}
	return bp, nil
}

// newBatch is a batch of n members named after label: ids label-1..n,
// payloads unique to the batch.
func (f *fixture) newBatch(label string, n int) mq.Batch {
	b := mq.Batch{ID: f.name(label)}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s-%d", b.ID, i)
		b.Messages = append(b.Messages, mq.Message{ID: id, Payload: []byte(id)})
	}
	return b
}

// batchOutcome is what the publisher was told about one batch.
type batchOutcome struct {
	ack     mq.BatchAck
	err     error
	refused bool // a definite refusal (mq.ErrBatchRefused)
}

func (o batchOutcome) String() string {
	switch {
	case o.err == nil:
		if n := len(o.ack.Positions); n > 3 {
			return fmt.Sprintf("committed at %s..%s (%d members)", o.ack.Positions[0], o.ack.Positions[n-1], n)
		}
		return fmt.Sprintf("committed at %s", strings.Join(o.ack.Positions, ","))
	case o.refused:
		return "refused: " + oneLine(o.err.Error())
	default:
		return "unknown: " + oneLine(o.err.Error())
	}
}

// publishBatch publishes b and records it.
func (f *fixture) publishBatch(bp mq.BatchPublisher, topic string, b mq.Batch) batchOutcome {
	return f.publishBatchCtx(f.ctx, bp, topic, b)
}

func (f *fixture) publishBatchCtx(ctx context.Context, bp mq.BatchPublisher, topic string, b mq.Batch) batchOutcome {
	what := fmt.Sprintf("%s batch=%s members=%d", topic, b.ID, len(b.Messages))
	switch {
	case b.Abandon > 0:
		what += fmt.Sprintf(" (stops after %d, never commits)", b.Abandon)
	case b.NoCommitReply:
		what += " (the commit's reply is not awaited)"
	}
	h := f.rec.Invoke("producer", "publish-batch", what)
	ack, err := bp.PublishBatch(ctx, topic, b)
	o := batchOutcome{ack: ack, err: err, refused: errors.Is(err, mq.ErrBatchRefused)}
	if err == nil || o.refused {
		h.OK(o.String())
	} else {
		h.Info(o.String())
	}
	return o
}

// stored is the topic read back: each payload's stored copies, and its
// index in the topic's order.
type stored struct {
	copies map[string]int
	index  map[string]int
}

func (f *fixture) readStored(topic string) (stored, error) {
	h := f.rec.Invoke("checker", "read-all", topic)
	all, err := f.b.ReadAll(f.ctx, topic)
	if err != nil {
		h.Info(err.Error())
		return stored{}, unsure("reading the topic back", err)
	}
	s := stored{copies: map[string]int{}, index: map[string]int{}}
	for i, m := range all {
		p := string(m.Message.Payload)
		s.copies[p]++
		s.index[p] = i
	}
	h.OK(fmt.Sprintf("%d stored", len(all)))
	return s, nil
}

// count is how many of b's members are stored, and the first one stored
// twice ("" if none).
func (s stored) count(b mq.Batch) (n int, twice string) {
	for _, m := range b.Messages {
		c := s.copies[string(m.Payload)]
		if c > 0 {
			n++
		}
		if c > 1 && twice == "" {
			twice = string(m.Payload)
		}
	}
	return n, twice
}

// whole expects b's members stored once each, next to each other in
// order: a committed batch.
func (f *fixture) whole(r *spec.R, s stored, b mq.Batch, what string) {
	n, twice := s.count(b)
	r.Expect(twice).To(gomega.BeEmpty(), "%s: member %s is stored %d times", what, twice, s.copies[twice])
	r.Expect(n).To(gomega.Equal(len(b.Messages)), "%s: the publisher was told the batch is committed, but only %d of its %d members are stored", what, n, len(b.Messages))
	first := s.index[string(b.Messages[0].Payload)]
	for i, m := range b.Messages {
		at := s.index[string(m.Payload)]
		r.Expect(at).To(gomega.Equal(first+i), "%s: the members are not stored at consecutive positions in order (member %d is at index %d, the first at %d)", what, i+1, at, first)
	}
}

// wholeOrNothing expects b stored whole or not at all, never a member
// twice; refused, it must be nothing.
func (f *fixture) wholeOrNothing(r *spec.R, s stored, b mq.Batch, o batchOutcome, what string) {
	n, twice := s.count(b)
	r.Expect(twice).To(gomega.BeEmpty(), "%s: member %s is stored %d times", what, twice, s.copies[twice])
	if o.refused {
		r.Expect(n).To(gomega.BeZero(), "%s: the broker refused the batch whole, yet %d of its %d members are stored", what, n, len(b.Messages))
	}
	r.Expect(n == 0 || n == len(b.Messages)).To(gomega.BeTrue(), "%s: %d of the batch's %d members are stored: a partial batch", what, n, len(b.Messages))
}

// batchWholeOnce is BR-8.1: a committed batch stored whole and once; the
// same batch retried after a commit whose reply the publisher did not see
// (same batch id, same message ids) not stored again; a batch naming a
// message id twice, and one repeating an id already stored, never stored
// twice nor in part.
func batchWholeOnce(f *fixture) judge {
	bp, j := f.batchPublisher()
	if j != nil {
		return j
	}
	// Every failure here is a count of what is stored, not a timing.
	f.notTimed()
	topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: max(applied(f.w, f.t.Caps), batchWindow)})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	a := f.newBatch("a", 3)
	oa := f.publishBatch(bp, topic, a)

	// The commit's reply unseen, then the same batch again.
	lost := f.newBatch("lost", 3)
	first, retry, lostHow, err := f.loseCommitReply(bp, topic, lost)
	if err != nil {
		return f.failed(err, "staging the lost commit reply")
	}

	// One id twice inside a batch (the third member repeats the first's).
	inside := f.newBatch("inside", 3)
	inside.Messages[2].ID = inside.Messages[0].ID
	oi := f.publishBatch(bp, topic, inside)

	// An id of batch a, inside the window, in a new batch.
	across := f.newBatch("across", 3)
	across.Messages[1].ID = a.Messages[1].ID
	ox := f.publishBatch(bp, topic, across)

	s, errR := f.readStored(topic)
	return func(r *spec.R) {
		f.must(r, errR, "reading the topic back")
		// Positive evidence first, whatever else is undecided.
		for _, c := range []struct {
			b mq.Batch
			o batchOutcome
			w string
		}{
			// Its retry's refusal is of the copy: the first send may
			// have stored it.
			{lost, batchOutcome{}, "the batch retried after its commit's reply was not seen"},
			{inside, oi, "the batch naming one message id twice"},
			{across, ox, "the batch repeating a stored message id"},
		} {
			f.wholeOrNothing(r, s, c.b, c.o, c.w)
		}
		if oa.err == nil {
			f.whole(r, s, a, "the committed batch")
		}
		if retry.err == nil {
			f.whole(r, s, lost, "the batch whose retry was reported committed")
		}
		// A member of an id seen twice is stored once at most: the first
		// member's payload or the third's, not both.
		r.Expect(s.copies[string(inside.Messages[0].Payload)]+s.copies[string(inside.Messages[2].Payload)]).To(gomega.BeNumerically("<=", 1),
			"message id %s appears twice in one batch and is stored twice", inside.Messages[0].ID)
		// Only where batch a's member is stored does the id stand taken:
		// a batch a whose publish failed (a busy host timed its commit
		// out) may never have landed, leaving its ids free.
		if s.copies[string(a.Messages[1].Payload)] > 0 {
			r.Expect(s.copies[string(across.Messages[1].Payload)]).To(gomega.BeZero(),
				"message id %s, stored by an earlier batch inside the de-dupe window, is stored again by a later batch", a.Messages[1].ID)
		}
		nLost, _ := s.count(lost)
		r.Ev.Figure("members of the retried batch stored", nLost, "")
		f.must(r, oa.err, "the first batch's publish")
		// The first send's outcome is unknown to the publisher by design;
		// what it left is read back.
		if lostHow == "" {
			f.unknown(r, "the proxy did not see the commit's reply to drop (the first send: %s): the lost-reply case was not exercised", first)
		}
		if nLost == 0 {
			f.unknown(r, "the batch whose commit's reply %s was not stored, and its retry %s: the lost-reply case did not happen as staged", lostHow, retry)
		}
		r.Ev.Notef("committed batch: %s; the commit's reply %s: %s, then the retry: %s, %d of %d members stored once; a batch naming an id twice: %s; a batch repeating a stored id: %s",
			oa, lostHow, first, retry, nLost, len(lost.Messages), oi, ox)
	}
}

// commitReplyWait is how long the publisher of a batch whose commit's
// reply the proxy drops waits before it gives up: long enough for the
// members before the commit on a busy host; a later reply is dropped all
// the same.
const commitReplyWait = 2 * time.Second

// loseCommitReply sends b so that its commit's reply never reaches the
// publisher, then sends b again (same batch id, same message ids), as a
// publisher that only saw a timeout retries (on the rule's handle): through the fault proxy where
// the target has one (the server's reply dropped on the way back), else
// with the commit's reply not awaited (mq.Batch.NoCommitReply). It returns
// both outcomes and how the reply was lost ("": the proxy never saw it).
func (f *fixture) loseCommitReply(bp mq.BatchPublisher, topic string, b mq.Batch) (first, retry batchOutcome, how string, err error) {
	fault := f.t.Fault
	if fault == nil {
		send := b
		send.NoCommitReply = true
		first = f.publishBatch(bp, topic, send)
		return first, f.publishBatch(bp, topic, b), "was not awaited", nil
	}
	var px *faultproxy.Proxy
	if err := f.kitStep("start-proxy", fault.Addr, func() (err error) {
		px, err = faultproxy.Start(fault.Addr, faultproxy.Splitter(fault.Split))
		return err
	}); err != nil {
		return first, retry, "", err
	}
	f.defer_(func() { _ = px.Close() })
	var via mq.Broker
	if err := f.kitStep("open-broker", "through the proxy", func() (err error) {
		via, err = fault.OpenVia(f.ctx, px.Addr())
		return err
	}); err != nil {
		return first, retry, "", err
	}
	f.defer_(func() { _ = via.Close() })
	vbp, ok := via.(mq.BatchPublisher)
	if !ok {
		return first, retry, "", &setupError{step: "open-broker through the proxy", err: fmt.Errorf("the handle through the proxy (%T) is no mq.BatchPublisher", via)}
	}
	gone := px.DropNext(faultproxy.Match(fault.PublishReply(topic)))
	f.rec.Note("proxy", "arm", b.ID, "drop the next publish reply on "+topic+": the commit's")
	ctx, cancel := context.WithTimeout(f.ctx, commitReplyWait)
	first = f.publishBatchCtx(ctx, vbp, topic, b)
	cancel()
	// The reply can reach the proxy after the publisher gave up (a loaded
	// or paused kit): it is waited for a little.
	select {
	case <-gone:
		how = "was lost on the way (the proxy dropped it)"
		f.rec.Note("proxy", "dropped", b.ID, "the commit's reply never reached the publisher")
	case <-time.After(dropGrace):
	}
	// The drop stays armed when no reply came (a commit never sent): the
	// retry goes on the rule's own handle, so the proxy cannot swallow
	// its answer.
	_ = via.Close()
	_ = px.Close()
	return first, f.publishBatch(bp, topic, b), how, nil
}

// batchAbandoned is BR-8.2: a publisher sends part of a batch and dies
// (its connection closes, no commit); no member may be stored, at once
// and after the server's abandon timeout.
func batchAbandoned(f *fixture) judge {
	bp, j := f.batchPublisher()
	if j != nil {
		return j
	}
	f.notTimed()
	topic, err := f.topic("t", mq.TopicConfig{})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	limits := bp.BatchLimits()
	b := f.newBatch("abandoned", 5)
	b.Abandon = 3
	o := f.publishBatch(bp, topic, b)
	sent := time.Now()
	early, errEarly := f.readStored(topic)
	wait := max(limits.Abandon, time.Millisecond) + f.w.Tolerance
	f.rec.Note("kit", "wait", topic, fmt.Sprintf("%s: the server's abandon timeout %s and the tolerance", wait, limits.Abandon))
	f.sleepUntil(sent.Add(wait))
	waited := time.Since(sent)
	late, errLate := f.readStored(topic)
	return func(r *spec.R) {
		// Positive evidence first: a member of a batch never committed.
		if errEarly == nil {
			n, _ := early.count(b)
			r.Expect(n).To(gomega.BeZero(), "right after the publisher stopped mid-batch (no commit), %d of the %d members it sent are stored: a partial batch", n, b.Abandon)
		}
		if errLate == nil {
			n, _ := late.count(b)
			r.Expect(n).To(gomega.BeZero(), "%s after the publisher stopped mid-batch, %d of the %d members it sent are stored: a partial batch", waited.Round(time.Millisecond), n, b.Abandon)
		}
		if o.refused {
			f.unknown(r, "the broker refused the batch's first members (%s): the abandoned batch was not staged", o)
		}
		f.must(r, o.err, "sending the members of the batch to abandon")
		f.must(r, errEarly, "reading the topic back at once")
		f.must(r, errLate, "reading the topic back after the abandon timeout")
		if waited < wait {
			f.unknown(r, "the workload ended %s after the batch was abandoned, before the server's abandon timeout and the tolerance (%s) were reached", waited.Round(time.Millisecond), wait)
		}
		r.Ev.Figure("abandon timeout", limits.Abandon.Seconds(), "s")
		r.Ev.Figure("waited after the last member", waited.Seconds(), "s")
		r.Ev.Notef("%d of %d members sent, no commit, the publisher's connection closed: nothing stored at once nor %s later", b.Abandon, len(b.Messages), waited.Round(time.Millisecond))
	}
}

// batchLimit is BR-8.3: a batch of the size limit the target reports is
// committed whole; one member more is refused whole, with an error.
func batchLimit(f *fixture) judge {
	bp, j := f.batchPublisher()
	if j != nil {
		return j
	}
	f.notTimed()
	topic, err := f.topic("t", mq.TopicConfig{})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	limit := bp.BatchLimits().MaxMessages
	if limit <= 0 {
		return func(r *spec.R) {
			r.Expect(limit).To(gomega.BeNumerically(">", 0), "the target reports no batch size limit (%d)", limit)
		}
	}
	// A batch the broker abandons (idle past its timeout while the kit's
	// host paused it) says nothing of the limit: tried again, fresh.
	at := f.newBatch("at", limit)
	oAt := f.publishBatch(bp, topic, at)
	for try := 1; try < 3 && errors.Is(oAt.err, mq.ErrBatchAbandoned) && f.ctx.Err() == nil; try++ {
		at = f.newBatch(fmt.Sprintf("at%d", try), limit)
		oAt = f.publishBatch(bp, topic, at)
	}
	over := f.newBatch("over", limit+1)
	oOver := f.publishBatch(bp, topic, over)
	s, errR := f.readStored(topic)
	return func(r *spec.R) {
		f.must(r, errR, "reading the topic back")
		r.Ev.Figure("batch size limit", limit, "")
		nOver, twice := s.count(over)
		r.Ev.Figure("members of the over-limit batch stored", nOver, "")
		r.Expect(twice).To(gomega.BeEmpty(), "member %s of the over-limit batch is stored twice", twice)
		r.Expect(nOver).To(gomega.BeZero(), "a batch of %d members, over the limit of %d, must be refused whole; %d of its members are stored (%s)", limit+1, limit, nOver, oOver)
		r.Expect(oOver.err).To(gomega.HaveOccurred(), "a batch over the limit of %d was reported committed (%s), yet nothing of it is stored", limit, oOver)
		if oAt.err == nil {
			f.whole(r, s, at, "the batch of the limit's size")
		}
		if errors.Is(oAt.err, mq.ErrBatchAbandoned) {
			f.unknown(r, "the broker abandoned the batch of the limit's size (%d) before its commit, three times (%s): whether it fits the limit was not reached", limit, oAt)
		}
		r.Expect(oAt.refused).To(gomega.BeFalse(), "a batch of exactly the reported limit (%d) was refused (%s): the limit is lower than reported", limit, oAt)
		f.must(r, oAt.err, "publishing a batch of the limit's size")
		if !oOver.refused {
			f.unknown(r, "the over-limit batch ended with an error that is not the broker's refusal, so what the publisher was told is unknown: %s", oOver)
		}
		r.Ev.Notef("a batch of %d members: %s; of %d: %s, nothing of it stored", limit, oAt, limit+1, oOver)
	}
}
