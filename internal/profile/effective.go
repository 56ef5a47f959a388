package profile

import (
	"fmt"
	"strings"
	"time"
)

// What the broker really does with a declared stream and consumer, where
// that differs from the words of the declaration: the NATS server's
// effective de-dupe window, and redeliveries cut short by retention.

// NATSMinWindow is the shortest duplicates window (and max age) the NATS
// server accepts (server/stream.go: "needs to be >= 100ms").
const NATSMinWindow = 100 * time.Millisecond

// NATSDuplicates is the de-dupe window a NATS server gives a stream: the
// declared one, or, when none is declared, min(2m, maxAge) (server/stream.go
// checkStreamCfg: an unset window on a stream whose max age is under the
// default becomes the max age).
func NATSDuplicates(declared, maxAge time.Duration) time.Duration {
	switch {
	case declared > 0:
		return declared
	case maxAge > 0 && maxAge < NATSDefaultDuplicates:
		return maxAge
	}
	return NATSDefaultDuplicates
}

// natsWindowText says how the effective window came about.
func natsWindowText(s *Stream) string {
	if s.Duplicates > 0 {
		return s.Duplicates.String()
	}
	w := NATSDuplicates(0, s.MaxAge.D())
	if s.MaxAge == 0 {
		return fmt.Sprintf("%s, the NATS default: duplicates not set", w)
	}
	return fmt.Sprintf("%s (duplicates not set: NATS takes min(%s default, maxAge %s) = %s)", w, NATSDefaultDuplicates, s.MaxAge, w)
}

// validateNATSStream refuses what the NATS server refuses for a stream,
// with the server's bound.
func (p *Profile) validateNATSStream(sp string, s *Stream) error {
	bad := func(field, format string, args ...any) error {
		path := sp + "." + field
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	if s.MaxAge != 0 && s.MaxAge.D() < NATSMinWindow {
		return bad("maxAge", "%s is under %s (NATS refuses a max age under 100ms; 0s or leaving it out is unlimited)", s.MaxAge, Duration(NATSMinWindow))
	}
	if s.Duplicates != 0 && s.Duplicates.D() < NATSMinWindow {
		return bad("duplicates", "%s is under %s (NATS refuses a duplicates window under 100ms)", s.Duplicates, Duration(NATSMinWindow))
	}
	if s.MaxAge != 0 && s.Duplicates > s.MaxAge {
		return bad("duplicates", "duplicates window %s is longer than maxAge %s (NATS refuses a duplicates window larger than max age; leave it out and the server takes min(2m, maxAge))", s.Duplicates, s.MaxAge)
	}
	return nil
}

// schedule is when an unacked message is redelivered, as the broker
// computes it: the wait before redelivery k is waits[min(k-1, len-1)],
// n redeliveries at most (-1: no bound).
type schedule struct {
	waits []time.Duration
	n     int
}

// scheduleOf is the consumer's redelivery schedule; ok is false where
// nothing is redelivered by a wait (Kafka, ackPolicy none, maxDeliver 1,
// no wait declared).
func scheduleOf(b *Broker, bc *BrokerConsumer) (schedule, bool) {
	// RabbitMQ redelivers on a closed channel, not a timer (rabbitmq.go).
	if b.Kind == KindKafka || b.Kind == KindRabbitMQ || bc.AckPolicy == AckNone || bc.MaxDeliver == 1 {
		return schedule{}, false
	}
	sc := schedule{waits: []time.Duration{ackWait(b, bc)}, n: bc.MaxDeliver - 1}
	if len(bc.Backoff) > 0 {
		sc.waits = nil
		for _, d := range bc.Backoff {
			sc.waits = append(sc.waits, d.D())
		}
	}
	if bc.MaxDeliver <= 0 {
		sc.n = -1
	}
	if sc.waits[len(sc.waits)-1] <= 0 {
		return schedule{}, false
	}
	return sc, true
}

// at is the offset of redelivery k (1-based) from the first delivery.
func (sc schedule) at(k int) time.Duration {
	t := time.Duration(0)
	for i := 1; i <= min(k, len(sc.waits)); i++ {
		t = addSat(t, sc.waits[i-1])
	}
	if rest := k - len(sc.waits); rest > 0 {
		t = addSat(t, mulSat(sc.waits[len(sc.waits)-1], rest))
	}
	return t
}

// has reports whether redelivery k is in the schedule.
func (sc schedule) has(k int) bool { return k >= 1 && (sc.n < 0 || k <= sc.n) }

// lastBefore is the last redelivery before age, 0 if none: a linear walk
// through the back-off list, then a division along the repeating step.
func (sc schedule) lastBefore(age time.Duration) int {
	k := 0
	for i := 1; i <= len(sc.waits) && sc.has(i); i++ {
		if sc.at(i) >= age {
			return k
		}
		k = i
	}
	if !sc.has(k + 1) {
		return k
	}
	from, step := sc.at(len(sc.waits)), sc.waits[len(sc.waits)-1]
	more := int((age - from - 1) / step) // from + more*step < age
	if sc.n >= 0 {
		more = min(more, sc.n-len(sc.waits))
	}
	return len(sc.waits) + max(more, 0)
}

// cut is the schedule against the stream's retention: what is redelivered
// while the message is kept, and the first redelivery that would come after
// it is gone.
type cut struct {
	age        time.Duration
	sc         schedule
	last       int  // the last redelivery before the age (0: none)
	lost       bool // a redelivery of the schedule comes at or after it
	steps      []string
	trim, noun string // "the message expired at 5m0s", "maxAge 5m0s"
	gone       string // the timeline's mark at the age
}

// cutByAge cuts the consumer's schedule at the stream's maxAge (NATS: the
// message expires; Redis: MINID trimming by age). ok is false when there is
// no age or no schedule.
func cutByAge(b *Broker, s *Stream, bc *BrokerConsumer) (cut, bool) {
	sc, ok := scheduleOf(b, bc)
	if !ok || s.MaxAge == 0 {
		return cut{}, false
	}
	c := cut{age: s.MaxAge.D(), sc: sc, trim: "the message expired at " + s.MaxAge.String(), noun: "maxAge " + s.MaxAge.String(),
		gone: "maxAge: the message expires, gone from the stream"}
	if b.Kind == KindRedis {
		c.trim, c.noun = "the entry was trimmed at "+s.MaxAge.String(), "the trim at "+s.MaxAge.String()+" (maxAge)"
		c.gone = "trimmed by age: the entry is gone from the stream (and from the pending list at the next claim)"
	}
	c.last = sc.lastBefore(c.age)
	c.lost = sc.has(c.last + 1)
	// The steps: the back-off list one by one, then where the repeating
	// step crosses the age.
	for k := 1; k <= min(len(sc.waits), c.last+1) && sc.has(k); k++ {
		c.steps = append(c.steps, c.step(k))
	}
	if tail := len(sc.waits) + 1; sc.has(tail) && c.last+1 >= tail {
		// The first two of the repeating step and the two around the age:
		// a schedule of millions of redeliveries is never walked.
		var at []string
		prev := 0
		for _, k := range []int{tail, tail + 1, c.last, c.last + 1} {
			if k <= prev || k > c.last+1 || !sc.has(k) {
				continue
			}
			if prev > 0 && k > prev+1 {
				at = append(at, "...")
			}
			at = append(at, durText(sc.at(k)))
			prev = k
		}
		what := "the ack wait"
		if len(bc.Backoff) > 0 {
			what = "the last back-off step"
		}
		c.steps = append(c.steps, fmt.Sprintf("%s %s repeats from %s: redeliveries at %s",
			what, sc.waits[len(sc.waits)-1], durText(sc.at(len(sc.waits))), strings.Join(at, ", ")))
		for _, k := range []int{c.last, c.last + 1} {
			if k >= tail && sc.has(k) {
				c.steps = append(c.steps, c.step(k))
			}
		}
	}
	return c, true
}

// notable are the redeliveries a timeline shows: those of the back-off
// list, then only the last before the age.
func (c cut) notable() []int {
	var out []int
	for k := 1; k <= min(c.last, len(c.sc.waits)); k++ {
		out = append(out, k)
	}
	if c.last > len(c.sc.waits) {
		out = append(out, c.last)
	}
	return out
}

// step is one redelivery against the age, written out.
func (c cut) step(k int) string {
	at := c.sc.at(k)
	if at < c.age {
		return fmt.Sprintf("delivery %d at %s < %s: still stored", k+1, durText(at), c.noun)
	}
	return fmt.Sprintf("delivery %d at %s >= %s: %s, nothing is redelivered", k+1, durText(at), c.noun, c.trim)
}

// lossByAge names a redelivery the schedule declares that comes after the
// message is gone: a failed delivery then is a loss, not a duplicate. An
// unbounded schedule is named only when even its first redelivery is late.
func (f *finder) lossByAge(subject string, c *Consumer, b *Broker, s *Stream, bc *BrokerConsumer) {
	ct, ok := cutByAge(b, s, bc)
	if !ok || !ct.lost || (ct.sc.n < 0 && ct.last > 0) {
		return
	}
	first := ct.sc.at(ct.last + 1)
	check, what := "redelivery-after-expiry", "redelivery"
	if b.Kind == KindRedis {
		check, what = "claim-after-trim", "claim"
	}
	var arith []string
	if b.Kind == KindRedis && ct.last == 0 {
		arith = append(arith, fmt.Sprintf("the first claim after min-idle %s comes at %s >= %s: the entry is gone before any member can claim it", ackWait(b, bc), durText(first), ct.noun))
	} else {
		arith = append(arith, redeliveries(b, s, bc).How)
		arith = append(arith, ct.steps...)
	}
	arith = append(arith, fmt.Sprintf("a delivery that fails (a crash, an error, a lost ack) before %s is never delivered again: its %s is lost, with no dead-letter path declared", durText(first), strings.Join(scopeNames(c), ", ")))
	tl := []Mark{{Text: "delivery 1: the effect fails or the consumer crashes, no ack"}}
	for _, k := range ct.notable() {
		tl = append(tl, Mark{At: Duration(ct.sc.at(k)), Text: fmt.Sprintf("delivery %d: fails again, no ack", k+1)})
	}
	tl = append(tl, Mark{At: s.MaxAge, Text: ct.gone},
		Mark{At: Duration(first), Text: fmt.Sprintf("delivery %d due: nothing to %s, the effect is never done", ct.last+2, map[bool]string{true: "claim", false: "redeliver"}[b.Kind == KindRedis])})
	f.add(check, subject, f.streamPath(s)+".maxAge",
		fmt.Sprintf("the %s at %s comes after %s keeps the message: a delivery that failed by then is lost, not repeated", what, durText(first), ct.noun), arith, tl...)
}

// maxDeliverOne names a consumer whose broker consumer delivers once: an
// effect that fails is never retried.
func (f *finder) maxDeliverOne(subject string, c *Consumer, b *Broker, bc *BrokerConsumer) {
	if bc.MaxDeliver != 1 || bc.AckPolicy == AckNone || b.Kind == KindKafka {
		return
	}
	f.add("max-deliver-one", subject, f.consumerPath(bc)+".maxDeliver",
		fmt.Sprintf("maxDeliver 1 on %s: a delivery whose effect fails is never delivered again, so %s is lost", bc.Name, strings.Join(scopeNames(c), ", ")),
		[]string{"maxDeliver 1: one delivery and no redelivery",
			fmt.Sprintf("an effect that fails (a crash before the ack, an error, a timeout of the sink) leaves the message unacked; after the ack wait %s the server has no delivery left to make, and no dead-letter path is declared", ackWait(b, bc))},
		Mark{Text: "delivery 1: the effect fails, no ack"},
		Mark{At: Duration(ackWait(b, bc)), Text: "the ack wait ends: maxDeliver reached, nothing is redelivered; the effect is never done"})
}

func scopeNames(c *Consumer) []string {
	var out []string
	for _, s := range c.Scopes {
		out = append(out, s.Name)
	}
	return out
}

// horizonByAge is the record-shorter-than-redelivery check on a stream
// with an age: only the redeliveries while the message is kept count (a
// later one is lossByAge's).
func (f *finder) horizonByAge(cp, subject string, c *Consumer, r Redelivery, ct cut, life time.Duration, exp []string) {
	if ct.last == 0 {
		return
	}
	last := ct.sc.at(ct.last)
	if last < life {
		return
	}
	how := r.How
	if ct.sc.n < 0 {
		how = fmt.Sprintf("every %s while the message is stored: the last before %s is at %s", ct.sc.waits[len(ct.sc.waits)-1], ct.noun, durText(last))
	}
	arith := []string{fmt.Sprintf("redelivery at %s >= record lifetime %s: the record is gone when it comes back (%s)", durText(last), life, how)}
	if ct.lost {
		arith = append(arith, fmt.Sprintf("redeliveries at or after %s are not counted: the message is gone (a loss, not a duplicate)", ct.noun))
	}
	tl := []Mark{{Text: "delivery 1: effect done, record " + keyText(c.Dedupe.Key) + " written, the ack lost"},
		{At: Duration(life), Text: "the de-dupe record expires"}}
	for _, k := range ct.notable() {
		at := ct.sc.at(k)
		text := fmt.Sprintf("delivery %d: record found, skipped (the ack lost again)", k+1)
		if at >= life {
			text = fmt.Sprintf("delivery %d: no record, %s done again", k+1, strings.Join(exp, ", "))
		} else {
			arith = append(arith, fmt.Sprintf("redelivery at %s < record lifetime %s: the record is found (not a hazard)", durText(at), life))
		}
		tl = append(tl, Mark{At: Duration(at), Text: text})
	}
	tl = append(tl, Mark{At: Duration(ct.age), Text: ct.gone})
	f.add("record-shorter-than-redelivery", subject, cp+".dedupe.lifetime",
		fmt.Sprintf("the de-dupe record lives %s, the last redelivery while the message is kept comes at %s: it repeats %s", life, durText(last), strings.Join(exp, ", ")),
		arith, tl...)
}

// streamPath and consumerPath are the field paths of a declared stream and
// broker consumer, so a hazard points at the setting it comes from.
func (f *finder) streamPath(s *Stream) string {
	for i := range f.p.Brokers {
		for j := range f.p.Brokers[i].Streams {
			if &f.p.Brokers[i].Streams[j] == s {
				return fmt.Sprintf("brokers[%d].streams[%d]", i, j)
			}
		}
	}
	return ""
}

func (f *finder) consumerPath(bc *BrokerConsumer) string {
	for i := range f.p.Brokers {
		for j := range f.p.Brokers[i].Streams {
			for k := range f.p.Brokers[i].Streams[j].Consumers {
				if &f.p.Brokers[i].Streams[j].Consumers[k] == bc {
					return fmt.Sprintf("brokers[%d].streams[%d].consumers[%d]", i, j, k)
				}
			}
		}
	}
	return ""
}
