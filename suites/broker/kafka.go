package broker

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// The BR-5 rules: Kafka's own acknowledgement words (seed 002, 六). Kafka
// keeps no per-message acknowledgement: a consumer group's progress is its
// committed offset per partition, and the idempotent producer de-dupes the
// client's own retries inside one producer session. The rules need
// capabilities only such a broker declares (producer sessions, group
// offsets), so they are not-applicable on NATS and Redis, with the reason.

// kafkaCaps maps what a Kafka-like target declares to catalog
// capabilities.
func kafkaCaps(t target) []catalog.Capability {
	c := t.Caps
	var out []catalog.Capability
	if c.AckWait || c.RebalanceRedelivery {
		out = append(out, catalog.CapBrokerCrashRedelivery)
	}
	if t.LoseProduceReply != nil {
		out = append(out, catalog.CapBrokerLostProduceReply)
	}
	if c.ShareGroups {
		out = append(out, catalog.CapBrokerShareGroups)
	}
	return out
}

// kafkaOnly is why a BR-5 rule does not apply to a broker without Kafka's
// model (the target's own reason, when it gives one, comes first).
var kafkaOnly = map[string]string{
	"BR-5.1": "a Kafka rule: it needs producer sessions, a producer that de-dupes its own retries by producer id and sequence (mq.SessionBroker), and a produce reply the kit can lose; this broker's de-dupe, if any, is by message id (BR-1)",
	"BR-5.2": "a Kafka rule: it needs producer sessions (mq.SessionBroker); this broker's de-dupe, if any, is by message id inside a window (BR-1)",
	"BR-5.3": "a Kafka rule: it needs a group's committed offset (mq.GroupOffsets) and redelivery by a rebalance; this broker acknowledges each delivery (BR-2.3 checks a crash before the ack)",
	"BR-5.4": "a Kafka rule: it needs a group's committed offset to read and reset (mq.GroupOffsets), which this broker's adapter does not offer",
}

func registerKafka(p *plan) {
	reasons := map[string]string{}
	maps.Copy(reasons, kafkaOnly)
	maps.Copy(reasons, p.set.Reasons)
	p.set.Reasons = reasons
	none := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }
	p.set.Background("BR-5.1", p.workload("BR-5.1", none, idempotentRetry))
	p.set.Background("BR-5.2", p.workload("BR-5.2", none, resendAfterRestart))
	p.set.Background("BR-5.3", p.workload("BR-5.3", none, commitOrder))
	p.set.Background("BR-5.4", p.workload("BR-5.4", none, rereadAfterReset))
}

// arrival bounds a wait for a record that must come (a first delivery, one
// after a rebalance): generous, since a group join and a rebalance take
// their own time on a busy machine. It is a bound, never a measurement.
func (f *fixture) arrival() time.Time { return time.Now().Add(f.w.AckWait + 10*time.Second) }

// sessions is the handle's producer sessions, or the judge that says the
// target declared them and has none.
func (f *fixture) sessions() (mq.SessionBroker, judge) {
	sb, ok := f.b.(mq.SessionBroker)
	if !ok {
		return nil, func(r *spec.R) {
			r.Expect(ok).To(gomega.BeTrue(), "the target declares producer sessions, but its handle (%T) cannot start one (mq.SessionBroker)", f.b)
		}
	}
	return sb, nil
}

// producer starts a producer session of the rule's own.
func (f *fixture) producer(sb mq.SessionBroker, actor string) (mq.Producer, error) {
	var p mq.Producer
	if err := f.kitStep("start-producer", actor+": a new producer session", func() (err error) {
		p, err = sb.Producer(f.ctx)
		return err
	}); err != nil {
		return nil, err
	}
	f.defer_(func() { _ = p.Close() })
	return p, nil
}

// publishVia publishes on a producer session and records it.
func (f *fixture) publishVia(p mq.Producer, actor, topic string, m mq.Message) (mq.PublishAck, error) {
	h := f.rec.Invoke(actor, "publish", fmt.Sprintf("%s id=%s %q", topic, m.ID, m.Payload))
	ack, err := p.Publish(f.ctx, topic, m)
	if err != nil {
		h.Info(err.Error())
		return ack, unsure("publishing id="+m.ID, err)
	}
	h.OK(describeAck(ack))
	return ack, nil
}

// idempotentRetry is BR-5.1: the broker appends a produce and loses its
// reply; the client's own retry, inside the same producer session, must be
// dropped.
func idempotentRetry(f *fixture) judge {
	f.notTimed() // order and counts, each wait a generous bound
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	var p mq.Producer
	var lr kithooks.LostReply
	if err := f.kitStep("lose-produce-reply", topic+": a producer session whose next produce is stored and its reply lost", func() (err error) {
		p, lr, err = f.t.LoseProduceReply(f.ctx, topic)
		return err
	}); err != nil {
		return f.failed(err, "arming the lost-reply fault")
	}
	f.defer_(func() { _ = p.Close() })
	defer lr.Remove()
	id := f.name("m")
	payload := "E9 " + id
	ack, perr := f.publishVia(p, "producer", topic, mq.Message{ID: id, Payload: []byte(payload)})
	fired, seen := lr.Fired(), lr.Seen()
	lr.Remove()
	for i, s := range seen {
		what := "the client's retry"
		if i == 0 {
			what = "stored; its reply lost"
		}
		f.rec.Note("broker", "produce request", s, what)
	}
	n, errR := f.intents(topic, payload)
	f.ev.Figure("produce requests seen", len(seen), "")
	f.ev.Figure("records stored", n, "")
	return func(r *spec.R) {
		if !fired {
			f.unknown(r, "the lost-reply fault never took a produce to %s, so no retry was provoked", topic)
		}
		f.must(r, perr, "after the lost reply the producer's own retry must end in an acknowledgement")
		f.must(r, errR, "reading the topic back")
		r.Ev.Notef("the first produce was stored and its reply lost; %d produce request(s) were seen (%s); the producer was acknowledged at %s; %d record(s) of E9 stored",
			len(seen), strings.Join(seen, "; "), ack.Position, n)
		r.Expect(len(seen)).To(gomega.BeNumerically(">=", 2), "the client must retry after the lost reply")
		r.Expect(n).To(gomega.Equal(1), "a retry inside one idempotent producer session must leave one record; records of E9 stored")
	}
}

// resendAfterRestart is BR-5.2: a producer session publishes E9 and ends
// (a restart after a reply it did not trust); a new session re-sends the
// same message. Without id-based de-dupe the broker stores it twice.
func resendAfterRestart(f *fixture) judge {
	f.notTimed() // order and counts, each wait a generous bound
	sb, j := f.sessions()
	if j != nil {
		return j
	}
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	id := f.name("m")
	payload := "E9 " + id
	m := mq.Message{ID: id, Payload: []byte(payload)}
	p1, err := f.producer(sb, "producer-1")
	if err != nil {
		return f.failed(err, "starting the first producer session")
	}
	a1, err1 := f.publishVia(p1, "producer-1", topic, m)
	h := f.rec.Invoke("producer-1", "restart", "the process ends; its producer session with it")
	if err := p1.Close(); err != nil {
		h.Info(err.Error())
	} else {
		h.OK("")
	}
	p2, err := f.producer(sb, "producer-2")
	if err != nil {
		return f.failed(err, "starting the second producer session")
	}
	a2, err2 := f.publishVia(p2, "producer-2", topic, m)
	n, errR := f.intents(topic, payload)
	declared := 2
	if f.t.Caps.DedupeWindow > 0 {
		declared = 1 // the target claims de-dupe by message id
	}
	f.ev.Figure("records stored", n, "")
	f.ev.Compare(verdict.Comparison{Setting: "records of one message id re-sent by a new producer session", Declared: fmt.Sprint(declared), Actual: fmt.Sprint(n), Source: "measured", Match: n == declared})
	return func(r *spec.R) {
		f.must(r, err1, "first publish")
		f.must(r, err2, "the re-send after the restart")
		f.must(r, errR, "reading the topic back")
		r.Ev.Notef("producer-1 stored E9 at %s and restarted; producer-2 re-sent the same id at %s; %d record(s) of E9 stored (declared: %d)", a1.Position, a2.Position, n, declared)
		if n > 1 {
			r.Ev.Hazard("the same message (id %s) re-sent by a new producer session after a restart is stored %d times (at %s and %s): the idempotent producer drops only its own retries inside one session; it is not business de-dupe, so consumers must de-dupe by (message id, version, side effect)",
				id, n, a1.Position, a2.Position)
		}
		r.Expect(n).To(gomega.Equal(declared), "records of one id re-sent by a new producer session (measured; want = declared)")
	}
}

// commitOrder is BR-5.3: two groups read the same two records, E9 then
// E10. In group A, W1 commits E9 and dies before its effect; in group B,
// W1 applies E9's effect and dies before committing. W2 then joins each
// group; the record it is handed first shows what the group kept. The
// partition's order makes it exact: no wait for something not to happen.
func commitOrder(f *fixture) judge {
	f.notTimed() // order and counts, each wait a generous bound
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	e9, e10 := f.name("E9"), f.name("E10")
	for _, id := range []string{e9, e10} {
		if _, err := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte(id)}); err != nil {
			return f.failed(err, "publishing "+id)
		}
	}
	type order struct {
		name, crash string
		commitFirst bool
		first       string // what W2 was handed first
		attempt     int
		effects     int // effects of E9
		committed   string
		err         error
	}
	orders := []*order{
		{name: "commit-then-process", crash: "after the commit, before the effect", commitFirst: true},
		{name: "process-then-commit", crash: "after the effect, before the commit"},
	}
	offsets, _ := f.b.(mq.GroupOffsets)
	for _, o := range orders {
		o.err = func() error {
			group := f.name("g")
			w1, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: f.w.AckWait})
			if err != nil {
				return err
			}
			d, err := f.next("W1", w1, f.arrival())
			if err != nil || d == nil {
				return noDelivery(o.name+": W1 was handed nothing", err)
			}
			if got := d.d.Message().ID; got != e9 {
				return fmt.Errorf("%s: W1 was handed %s first, not E9 (%s)", o.name, got, e9)
			}
			if o.commitFirst {
				if err := f.settle("W1", "commit", d.d, d.d.Ack); err != nil {
					return fmt.Errorf("%s: W1's commit: %w", o.name, err)
				}
			} else {
				o.effects++
				f.rec.Note("W1", "effect", "E9", "index updated")
			}
			h := f.rec.Invoke("W1", "crash", o.name+": "+o.crash)
			_ = w1.Close()
			h.OK("")
			if offsets != nil {
				if pos, err := offsets.Committed(f.ctx, topic, group); err == nil {
					o.committed = pos
					f.rec.Note("broker", "committed offset", group, orNone(pos))
				}
			}
			w2, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: f.w.AckWait})
			if err != nil {
				return err
			}
			d2, err := f.next("W2", w2, f.arrival())
			if err != nil || d2 == nil {
				return noDelivery(o.name+": W2 was handed nothing after the rebalance", err)
			}
			o.first, o.attempt = d2.d.Message().ID, d2.d.Attempt()
			if o.first == e9 {
				o.effects++
				f.rec.Note("W2", "effect", "E9", "index updated")
			}
			return f.settle("W2", "commit", d2.d, d2.d.Ack)
		}()
	}
	name := map[string]string{e9: "E9", e10: "E10"}
	return func(r *spec.R) {
		for _, o := range orders {
			f.must(r, o.err, "%s", o.name)
			r.Ev.Figure(o.name+": effects of E9", o.effects, "")
			r.Ev.Notef("%s: W1 crashed %s; the group's committed position was %s; W2 was handed %s first (attempt %d); E9's effect ran %d time(s)",
				o.name, o.crash, orNone(o.committed), name[o.first], o.attempt, o.effects)
		}
		a, b := orders[0], orders[1]
		if a.first == e10 {
			r.Ev.Hazard("commit-then-process: W1 committed past E9 and crashed before its effect; the group resumed at E10 and E9's effect never happened (lost): an offset commit is not a record of the side effect")
		}
		if b.first == e9 && b.effects > 1 {
			r.Ev.Hazard("process-then-commit: W1 applied E9's effect and crashed before committing; after the rebalance W2 was handed E9 again and the effect ran %d times: the effect must be idempotent", b.effects)
		}
		r.Expect(name[a.first]).To(gomega.Equal("E10"), "commit-then-process: a confirmed commit must move the group past E9, so after W1's crash W2 begins at E10 (E9 lost); W2 was handed first")
		r.Expect(name[b.first]).To(gomega.Equal("E9"), "process-then-commit: with no commit, W2 must be handed E9 again after the rebalance; W2 was handed first")
	}
}

func orNone(pos string) string {
	if pos == "" {
		return "none"
	}
	return pos
}

// rereadAfterReset is BR-5.4: W1 reads five messages m-5..m-9 (business
// sequence 5..9 in a header) and commits each; the group's committed
// position after m-6 is kept. After W1 is gone the group is reset to that
// position, and W2 must read m-7, m-8, m-9 again: the same messages at the
// same positions. The evidence sets each offset beside the business
// sequence it is not.
func rereadAfterReset(f *fixture) judge {
	f.notTimed() // order and counts, each wait a generous bound
	offsets, ok := f.b.(mq.GroupOffsets)
	if !ok {
		return func(r *spec.R) {
			r.Expect(ok).To(gomega.BeTrue(), "the target declares group offsets, but its handle (%T) cannot read or reset them (mq.GroupOffsets)", f.b)
		}
	}
	topic, err := f.topic("t", mq.TopicConfig{Retention: mq.Limits})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	tag := f.name("m")
	var ids []string
	for seq := 5; seq <= 9; seq++ {
		id := fmt.Sprintf("%s-%d", tag, seq)
		ids = append(ids, id)
		m := mq.Message{ID: id, Payload: []byte(fmt.Sprintf("m-%d seq%d v1", seq, seq)), Headers: map[string]string{"seq": fmt.Sprint(seq)}}
		if _, err := f.publish("producer", topic, m); err != nil {
			return f.failed(err, "publishing m-"+fmt.Sprint(seq))
		}
	}
	group := f.name("g")
	type read struct{ id, pos string }
	var first, again []read
	var kept, next string
	err = func() error {
		w1, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: f.w.AckWait})
		if err != nil {
			return err
		}
		for len(first) < len(ids) {
			d, err := f.next("W1", w1, f.arrival())
			if err != nil || d == nil {
				return noDelivery(fmt.Sprintf("W1 read %d of %d", len(first), len(ids)), err)
			}
			first = append(first, read{d.d.Message().ID, d.d.Position()})
			if err := f.settle("W1", "commit", d.d, d.d.Ack); err != nil {
				return fmt.Errorf("W1's commit of %s: %w", d.d.Position(), err)
			}
			if len(first) == 2 {
				h := f.rec.Invoke("checker", "committed offset", group)
				if kept, err = offsets.Committed(f.ctx, topic, group); err != nil {
					h.Info(err.Error())
					return unsure("reading the committed offset", err)
				}
				h.OK(orNone(kept))
			}
		}
		_ = w1.Close()
		if len(first) > 2 {
			next = first[2].pos
		}
		if err := f.kitStep("reset-offset", fmt.Sprintf("group %s to %s", group, orNone(kept)), func() error {
			if kept == "" {
				return fmt.Errorf("the group had no committed position to reset to")
			}
			return offsets.Reset(f.ctx, topic, group, kept)
		}); err != nil {
			return err
		}
		w2, err := f.consumer(topic, group, mq.ConsumerConfig{AckWait: f.w.AckWait})
		if err != nil {
			return err
		}
		for len(again) < 3 {
			d, err := f.next("W2", w2, f.arrival())
			if err != nil || d == nil {
				break
			}
			again = append(again, read{d.d.Message().ID, d.d.Position()})
			_ = f.settle("W2", "commit", d.d, d.d.Ack)
		}
		return nil
	}()
	return func(r *spec.R) {
		f.must(r, err, "reading, committing and resetting")
		var table []string
		for i, rd := range first {
			table = append(table, fmt.Sprintf("m-%d (seq %d) at offset %s", i+5, i+5, rd.pos))
		}
		r.Ev.Notef("stored: %s. An offset is a place in one partition of one topic, not a business sequence: m-9's seq 9 lies at offset %s, and a re-send (BR-5.2) or another topic gives the same message another offset",
			strings.Join(table, ", "), first[len(first)-1].pos)
		r.Ev.Figure("committed position kept", orNone(kept), "")
		r.Ev.Figure("re-read after the reset", len(again), "")
		r.Expect(kept).To(gomega.Equal(next), "a commit after m-6 must leave the group's position at the next record, m-7's offset; the committed position")
		r.Expect(again).To(gomega.HaveLen(3), "after the reset to %s the group must read m-7, m-8 and m-9 again within retention; re-read %v", kept, again)
		r.Expect(again).To(gomega.Equal(first[2:]), "the re-read must be the same messages at the same offsets")
	}
}
