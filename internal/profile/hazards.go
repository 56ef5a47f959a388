package profile

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Hazard is one risk the declared pipeline carries, found without running
// anything: the check that found it, the catalog rule it relates to (the
// rule a live run would fail on), the arithmetic and a small timeline.
type Hazard struct {
	Check      string   `json:"check"`   // stable id of the check, e.g. retry-past-window
	Rule       string   `json:"rule"`    // catalog rule id, e.g. BR-1.3
	Subject    string   `json:"subject"` // what it is about, e.g. producer S3 -> nats main/EVENTS
	Summary    string   `json:"summary"`
	Arithmetic []string `json:"arithmetic"`
	Timeline   []Mark   `json:"timeline,omitempty"`
	Field      string   `json:"field"` // the profile field it comes from
	Line       int      `json:"line"`
}

// Mark is one point of a hazard's timeline. Label replaces the offset where
// the time is an order rather than a duration ("t0+", "later").
type Mark struct {
	At    Duration `json:"at"`
	Label string   `json:"label,omitempty"`
	Text  string   `json:"text"`
}

func (m Mark) when() string {
	if m.Label != "" {
		return m.Label
	}
	return "t=" + m.At.String()
}

// Check names one hazard check and the rule it relates to.
type Check struct {
	ID   string
	Rule string
	What string
}

// Checks is every hazard check, in the order hazards are reported.
var Checks = []Check{
	{"request-id-unscoped", "ES-1.5", "the event store does not reject a repeated requestId"},
	{"request-id-global", "ES-1.6", "a global requestId scope refuses the same requestId on another aggregate"},
	{"fresh-request-id", "ES-1.7", "a retry after a timeout uses a fresh requestId"},
	{"fresh-id-on-retry", "BR-1.6", "a producer retry carries a fresh message id"},
	{"retry-past-window", "BR-1.3", "a retry at or after the broker's de-dupe window"},
	{"window-not-refreshed", "BR-1.4", "the producer counts on a hit restarting the window; the broker does not restart it"},
	{"no-outbox", "CO-4.1", "no outbox between the database commit and the publish"},
	{"no-dedupe", "CO-1.1", "no de-dupe record in front of an effect that is not idempotent"},
	{"key-without-version", "CO-1.2", "a de-dupe key without the version drops a legitimate edit"},
	{"one-flag-across-scopes", "CO-1.3", "one processed flag across several side-effect scopes"},
	{"unconditional-upsert", "CO-1.4", "an unconditional write lets a stale version overwrite a newer one"},
	{"record-in-memory", "CO-2.1", "the de-dupe record is kept in memory"},
	{"ack-before-effect", "CO-2.2", "the ack is recorded before the effect"},
	{"record-shorter-than-redelivery", "CO-3.1", "the de-dupe record expires before the broker's last redelivery"},
	{"record-shorter-than-replay", "CO-3.1", "the de-dupe record expires before what a manual replay can reach"},
	{"redelivery-after-expiry", "BR-2.1", "a declared redelivery comes after the stream's maxAge removed the message: a loss, not a duplicate"},
	{"claim-after-trim", "BR-4.3", "a Redis claim comes after the stream was trimmed past the entry: a loss, not a duplicate"},
	{"max-deliver-one", "BR-2.6", "maxDeliver 1: a delivery whose effect fails is never delivered again"},
}

func checkByID(id string) Check {
	for _, c := range everyCheck() {
		if c.ID == id {
			return c
		}
	}
	panic("profile: unknown check " + id)
}

// finder collects hazards with their positions in the profile.
type finder struct {
	p   *Profile
	out []Hazard
}

func (f *finder) add(check, subject, field, summary string, arithmetic []string, timeline ...Mark) {
	c := checkByID(check)
	sort.SliceStable(timeline, func(i, j int) bool { return timeline[i].At < timeline[j].At })
	f.out = append(f.out, Hazard{Check: c.ID, Rule: c.Rule, Subject: subject, Summary: summary,
		Arithmetic: arithmetic, Timeline: timeline, Field: field, Line: f.p.Line(field)})
}

// Hazards runs every check on the profile.
func Hazards(p *Profile) []Hazard {
	f := &finder{p: p}
	if p.EventStore != nil {
		f.eventStore(p.EventStore)
	}
	for i := range p.Producers {
		f.producer(i, &p.Producers[i])
	}
	for i := range p.Consumers {
		f.consumer(i, &p.Consumers[i])
	}
	f.kinds()      // the product settings' checks (redis.go)
	f.durability() // power loss (durability.go)
	f.kafkaShare() // share groups (kafkashare.go)
	// Report in the order of Checks, then of the profile.
	order := map[string]int{}
	for i, c := range everyCheck() {
		order[c.ID] = i
	}
	sort.SliceStable(f.out, func(i, j int) bool { return order[f.out[i].Check] < order[f.out[j].Check] })
	return f.out
}

func (f *finder) eventStore(es *EventStore) {
	subject := "event store " + es.Name
	switch es.RequestIDScope {
	case ScopeNone:
		f.add("request-id-unscoped", subject, "eventStore.requestIdScope",
			"a repeated requestId on one aggregate is appended again instead of raising the duplicate-request-id conflict",
			[]string{"requestIdScope none: append enforces no uniqueness, so a retried command is a second business intent in the history"},
			Mark{Label: "t0", Text: "append, requestId r-1: stored"},
			Mark{Label: "t0+", Text: "the caller times out and retries, requestId r-1: stored again"})
	case ScopeGlobal:
		f.add("request-id-global", subject, "eventStore.requestIdScope",
			"the same requestId on another aggregate is refused, though the contract accepts it (unique per aggregate)",
			[]string{"requestIdScope global: uniqueness across aggregates is stricter than the contract's per-aggregate scope"},
			Mark{Label: "t0", Text: "aggregate a-1, requestId r-1: stored"},
			Mark{Label: "t1", Text: "aggregate a-2, requestId r-1: refused as a duplicate (a legitimate request lost)"})
	}
	if !es.RetryReusesRequestID {
		f.add("fresh-request-id", subject, "eventStore.retryReusesRequestId",
			"a caller that timed out retries with a fresh requestId: the duplicate check cannot see the retry",
			[]string{"retryReusesRequestId false: the first attempt's outcome is unknown after a timeout; a fresh requestId makes the retry a new intent"},
			Mark{Label: "t0", Text: "command, requestId r-1: appended, the answer lost"},
			Mark{Label: "t0+", Text: "the caller times out (outcome unknown)"},
			Mark{Label: "t1", Text: "retry, requestId r-2: appended again (query the history by r-1 first, then retry with r-1)"})
	}
}

// window is a stream's effective producer de-dupe window, described.
func window(b *Broker, s *Stream) (time.Duration, string) {
	switch {
	case b.Kind == KindRedis && s.Redis != nil && s.Redis.IDMP != nil:
		// Redis 8.6 IDMP: kept for the duration, unless more newer ids of
		// the same producer pushed it out first.
		w, n := s.Redis.IDMP.Window()
		how := fmt.Sprintf("IDMP-DURATION %s", Duration(w))
		if s.Redis.IDMP.Duration == 0 {
			how += " (Redis's default)"
		}
		return w, fmt.Sprintf("%s, and at most IDMP-MAXSIZE %d ids per producer: a retry after %d newer adds of the same producer is not recognized", how, n, n)
	case b.Kind != KindNATS:
		return 0, fmt.Sprintf("a %s stream has no producer de-dupe window", b.Kind)
	}
	return NATSDuplicates(s.Duplicates.D(), s.MaxAge.D()), natsWindowText(s)
}

func (f *finder) producer(i int, pr *Producer) {
	b, s := f.p.stream(pr.Broker, pr.Stream)
	subject := fmt.Sprintf("producer %s -> %s %s/%s", pr.Name, b.Kind, b.Name, s.Name)
	pp := fmt.Sprintf("producers[%d]", i)
	w, wtext := window(b, s)
	id := pr.MessageID
	if id == "" {
		id = "message id"
	}

	if len(pr.Retries) > 0 && !pr.KeepsMessageID {
		var at []string
		tl := []Mark{{Text: fmt.Sprintf("first publish, %s id-1 (its ack lost)", id)}}
		for k, r := range pr.Retries {
			at = append(at, r.String())
			tl = append(tl, Mark{At: r, Text: fmt.Sprintf("retry with a fresh %s id-%d: a new id, stored again", id, k+2)})
		}
		f.add("fresh-id-on-retry", subject, pp+".keepsMessageId",
			"every retry carries a fresh id, so the broker's de-dupe cannot recognize it",
			[]string{fmt.Sprintf("keepsMessageId false: %d retries (%s) each carry a new id; de-dupe compares ids, so up to %d copies of one change are stored whatever the window",
				len(pr.Retries), strings.Join(at, ", "), len(pr.Retries)+1)}, tl...)
	}
	if !pr.KeepsMessageID || len(pr.Retries) == 0 {
		// With a fresh id the window is moot: the hazard above says so.
		if pr.AfterCommit && !pr.Outbox {
			f.noOutbox(pp, subject, pr)
		}
		return
	}

	// Each retry is an independent branch from the first publish (seed 002
	// §二): a retry is sent because the previous answer was lost, so whether
	// an earlier retry reached the broker, and refreshed anything, is unknown.
	var past []int
	var arith []string
	if (b.Kind == KindNATS && s.Duplicates == 0) || (b.Kind == KindRedis && w > 0) {
		arith = append(arith, "window "+wtext)
	}
	tl := []Mark{{Text: fmt.Sprintf("first publish, %s kept for every retry (its ack lost)", id)}}
	if w > 0 {
		tl = append(tl, Mark{At: Duration(w), Text: "the de-dupe window ends"})
	}
	for k, r := range pr.Retries {
		branch := string(rune('A' + k%26))
		if r.D() >= w {
			past = append(past, k)
			if w > 0 {
				arith = append(arith, fmt.Sprintf("retry at %s >= window %s: the broker no longer de-dupes it", r, w))
			} else {
				arith = append(arith, fmt.Sprintf("retry at %s: %s, it is stored again", r, wtext))
			}
			tl = append(tl, Mark{At: r, Text: "branch " + branch + ": retry, same id, past the window: stored again (a second copy)"})
		} else {
			arith = append(arith, fmt.Sprintf("retry at %s < window %s: de-duped (not a hazard)", r, w))
			tl = append(tl, Mark{At: r, Text: "branch " + branch + ": retry, same id, inside the window: dropped as a duplicate"})
		}
	}
	if len(past) > 0 {
		if s.DuplicatesRefreshOnHit {
			arith = append(arith, "the window restarts on a hit, but only if an earlier retry reached the broker, which its sender cannot know: each retry is measured from the first publish")
		}
		var times []string
		for _, k := range past {
			times = append(times, pr.Retries[k].String())
		}
		summary := fmt.Sprintf("the retry at %s comes at or after the de-dupe window of %s: the broker may store a second copy", strings.Join(times, ", "), wtext)
		if w == 0 {
			summary = fmt.Sprintf("%s: the retries at %s may each store another copy", wtext, strings.Join(times, ", "))
		}
		f.add("retry-past-window", subject, fmt.Sprintf("%s.retries[%d]", pp, past[0]), summary, arith, tl...)
	}

	// The producer counts on each hit restarting the window: the chain of
	// gaps looks covered, the first-publish clock does not.
	if pr.AssumesRefreshOnHit && !s.DuplicatesRefreshOnHit && b.Kind == KindNATS {
		prev := time.Duration(0)
		chain := true
		var gaps []string
		var broken []string
		for _, r := range pr.Retries {
			gap := r.D() - prev
			prev = r.D()
			gaps = append(gaps, gap.String())
			chain = chain && gap < w
			if chain && r.D() >= w {
				broken = append(broken, r.String())
			}
		}
		if len(broken) > 0 {
			tl := []Mark{{Text: "first publish (its ack lost)"}, {At: Duration(w), Text: "de-dupe window ends: it runs from the first publish and a hit does not restart it"}}
			for _, r := range pr.Retries {
				verdict := "inside the window: dropped"
				if r.D() >= w {
					verdict = "past the window: stored again, though the producer counted on a restarted window"
				}
				tl = append(tl, Mark{At: r, Text: "retry, same id, " + verdict})
			}
			f.add("window-not-refreshed", subject, pp+".assumesRefreshOnHit",
				fmt.Sprintf("the producer counts on each duplicate restarting the window; the stream's window runs from the first publish, so the retry at %s is not covered", strings.Join(broken, ", ")),
				[]string{
					fmt.Sprintf("gaps between attempts %s are each < window %s, which covers the chain only if a hit restarts the window", strings.Join(gaps, ", "), w),
					fmt.Sprintf("duplicatesRefreshOnHit false: measured from the first publish, %s >= %s", broken[0], w),
				}, tl...)
		}
	}
	if pr.AfterCommit && !pr.Outbox {
		f.noOutbox(pp, subject, pr)
	}
}

func (f *finder) noOutbox(pp, subject string, pr *Producer) {
	f.add("no-outbox", subject, pp+".outbox",
		"the change is committed to the database and then published with no outbox: a crash in between leaves an event nobody will publish",
		[]string{"afterCommit true, outbox false: the commit and the publish are two steps in two systems; no retry of the producer and no redelivery of the broker knows about an event that was never published"},
		Mark{Label: "t0", Text: "database transaction commits the change"},
		Mark{Label: "t0+", Text: "the producer crashes before publishing"},
		Mark{Label: "later", Text: "the broker has no event: no consumer effect, nothing to redeliver (a reconciliation or an outbox finds it)"})
}

// exposed lists the scopes a repeat harms: all but versioned upserts.
func exposed(c *Consumer) []string {
	var out []string
	for _, s := range c.Scopes {
		if s.Effect != EffectVersionedUpsert {
			out = append(out, fmt.Sprintf("%s (%s)", s.Name, s.Effect))
		}
	}
	return out
}

func keyText(k []KeyPart) string {
	var parts []string
	for _, p := range k {
		parts = append(parts, string(p))
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func (f *finder) consumer(i int, c *Consumer) {
	b, s := f.p.stream(c.Broker, c.Stream)
	bc := s.consumer(c.BrokerConsumer)
	cp := fmt.Sprintf("consumers[%d]", i)
	subject := fmt.Sprintf("consumer %s (%s %s/%s, %s)", c.Name, b.Kind, b.Name, s.Name, bc.Name)
	exp := exposed(c)
	var scopes []string
	for _, s := range c.Scopes {
		scopes = append(scopes, s.Name)
	}
	first, second := scopes[0], ""
	if len(scopes) > 1 {
		second = scopes[1]
	}

	if c.Dedupe == nil && len(exp) > 0 {
		f.add("no-dedupe", subject, cp+".dedupe",
			"no de-dupe record: every redelivery repeats "+strings.Join(exp, ", "),
			[]string{"dedupe not declared and " + strings.Join(exp, ", ") + " is not a versioned upsert: at-least-once delivery gives at-least-once effects"},
			Mark{Label: "t0", Text: "delivery 1: effect done, the ack lost"},
			Mark{Label: "t1", Text: "delivery 2: effect done again"})
	}
	if d := c.Dedupe; d != nil {
		has := func(k KeyPart) bool { return contains(d.Key, k) }
		if !has(KeyVersion) && !has(KeyEventID) {
			f.add("key-without-version", subject, cp+".dedupe.key",
				fmt.Sprintf("the de-dupe key %s has no version: a legitimate edit (v2) finds v1's record and is dropped", keyText(d.Key)),
				[]string{fmt.Sprintf("key %s: (m-9,v1) and (m-9,v2) give the same key, so v2 is taken for a duplicate", keyText(d.Key))},
				Mark{Label: "t0", Text: "m-9 v1 processed, record " + keyText(d.Key) + " for m-9 written"},
				Mark{Label: "t1", Text: "m-9 v2, a legitimate edit: the record for m-9 is found, v2 dropped"})
		}
		if len(scopes) > 1 && !has(KeyScope) {
			f.add("one-flag-across-scopes", subject, cp+".dedupe.key",
				fmt.Sprintf("one processed flag for %d scopes (%s): %s done marks %s done", len(scopes), strings.Join(scopes, ", "), first, second),
				[]string{fmt.Sprintf("key %s has no scope: %d scopes share one record, so each scope's completion is not its own", keyText(d.Key), len(scopes))},
				Mark{Label: "t0", Text: first + " done, record " + keyText(d.Key) + " written"},
				Mark{Label: "t0+", Text: "crash before " + second},
				Mark{Label: "t1", Text: "redelivery: the record is found, " + second + " skipped for good"})
		}
	}
	for k, sc := range c.Scopes {
		if sc.Effect == EffectUpsert {
			f.add("unconditional-upsert", subject, fmt.Sprintf("%s.scopes[%d].effect", cp, k),
				fmt.Sprintf("%s writes unconditionally by id: a stale v1 arriving after v2 overwrites v2", sc.Name),
				[]string{"effect upsert: the write does not compare versions, so the last writer wins, not the newest version; a de-dupe record does not help, v1 may have no record yet"},
				Mark{Label: "t0", Text: sc.Name + " at v2"},
				Mark{Label: "t1", Text: "v1 redelivered or replayed late: written, " + sc.Name + " back at v1"})
		}
	}
	wait := ackWait(b, bc)
	if d := c.Dedupe; d != nil && d.Store == StoreMemory && len(exp) > 0 {
		f.add("record-in-memory", subject, cp+".dedupe.store",
			"the de-dupe record is kept in memory: a restart forgets it, and the redelivery after a crash repeats "+strings.Join(exp, ", "),
			[]string{fmt.Sprintf("store memory: a crash after the effect and before the ack comes back after the ack wait (%s) to a process with no record", wait)},
			Mark{Text: "effect done, record written in memory"},
			Mark{Label: "t=0+", Text: "crash before the ack; the restart starts with no record"},
			Mark{At: Duration(wait), Text: "redelivery: no record, effect done again"})
	}
	if (c.AckOrder == AckThenEffect || bc.AckPolicy == AckNone) && !c.Reconciliation {
		why := "ackOrder ack-then-effect: the broker records the ack before the effects (" + strings.Join(scopes, ", ") + ")"
		field := cp + ".ackOrder"
		if bc.AckPolicy == AckNone {
			why = fmt.Sprintf("ackPolicy none on %s: the server counts a delivery as acked when it sends it", bc.Name)
			field = fmt.Sprintf("%s.brokerConsumer", cp)
		}
		f.add("ack-before-effect", subject, field,
			"the ack comes before the effect: a crash in between loses the effect for good (no reconciliation declared)",
			[]string{why, "a crash between the ack and the effect: nothing is redelivered, and reconciliation false: nothing rebuilds it"},
			Mark{Text: "delivery 1 acked"},
			Mark{Label: "t=0+", Text: "crash before the effect"},
			Mark{At: Duration(wait), Text: "no redelivery (it was acked): the effect is missing"})
	}
	if c.AckOrder != AckThenEffect {
		f.lossByAge(subject, c, b, s, bc)
		f.maxDeliverOne(subject, c, b, bc)
	}
	if d := c.Dedupe; d != nil && d.Lifetime > 0 && len(exp) > 0 {
		f.horizon(cp, subject, c, b, s, bc, exp)
		f.replay(cp, subject, c, b, s, exp)
	}
}

// ackWait is the wait before the first redelivery.
func ackWait(b *Broker, bc *BrokerConsumer) time.Duration {
	switch {
	case len(bc.Backoff) > 0:
		return bc.Backoff[0].D()
	case bc.AckWait > 0:
		return bc.AckWait.D()
	case b.Kind == KindNATS:
		return NATSDefaultAckWait
	}
	return 0
}

// Redelivery is when the broker delivers one unacked message again.
type Redelivery struct {
	// At lists offsets of redeliveries after the first delivery: every one
	// while the waits differ (the back-off list), then only the last, so
	// nothing grows with a declared maxDeliver. Delivery[i] is the number
	// of the delivery At[i] is (2 for the first redelivery).
	At        []time.Duration
	Delivery  []int
	Unlimited bool   // no bound: redeliveries never stop
	How       string // the sum, as written in the hazard
}

// Last is the last redelivery's offset.
func (r Redelivery) Last() time.Duration {
	if len(r.At) == 0 {
		return 0
	}
	return r.At[len(r.At)-1]
}

// addSat and mulSat are duration arithmetic that saturates at the largest
// duration instead of wrapping to a negative one (backoff: [1000000h]).
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(d time.Duration, n int) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// durText writes a duration; a saturated one says it is beyond any bound.
func durText(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than " + d.Truncate(time.Hour).String()
	}
	return d.String()
}

// redeliveries adds the waits as the NATS server does: the wait after
// delivery k is Backoff[min(k-1, len-1)], or AckWait with no back-off; at
// most MaxDeliver deliveries. Past the back-off list every wait is the
// same, so the rest is one product, whatever maxDeliver says.
func redeliveries(b *Broker, s *Stream, bc *BrokerConsumer) Redelivery {
	switch {
	case b.Kind == KindKafka:
		return Redelivery{Unlimited: s.MaxAge == 0, At: []time.Duration{s.MaxAge.D()}, Delivery: []int{2},
			How: "a Kafka group re-reads from its last committed offset after a restart or rebalance, as far back as retention keeps"}
	case bc.AckPolicy == AckNone:
		return Redelivery{How: "ackPolicy none: nothing is redelivered"}
	case bc.MaxDeliver <= 0:
		return Redelivery{Unlimited: true, How: fmt.Sprintf("maxDeliver unlimited: a message that is never acked comes back every %s for ever", ackWait(b, bc))}
	}
	waits := []time.Duration{ackWait(b, bc)}
	src := "ackWait"
	if len(bc.Backoff) > 0 {
		waits, src = nil, "backoff"
		for _, d := range bc.Backoff {
			waits = append(waits, d.D())
		}
	}
	n := bc.MaxDeliver - 1 // redeliveries
	var r Redelivery
	var terms []string
	t := time.Duration(0)
	for k := 1; k <= min(n, len(waits)); k++ {
		t = addSat(t, waits[k-1])
		r.At, r.Delivery = append(r.At, t), append(r.Delivery, k+1)
		terms = append(terms, waits[k-1].String())
	}
	if rest := n - len(waits); rest > 0 {
		last := waits[len(waits)-1]
		t = addSat(t, mulSat(last, rest))
		r.At, r.Delivery = append(r.At, t), append(r.Delivery, n+1)
		terms = append(terms, fmt.Sprintf("%d x %s", rest, last))
	}
	switch {
	case n == 0:
		r.How = "maxDeliver 1: nothing is redelivered"
	case n == 1:
		r.How = fmt.Sprintf("%s %s, maxDeliver %d: one redelivery", src, terms[0], bc.MaxDeliver)
	default:
		r.How = fmt.Sprintf("%s %s = %s, maxDeliver %d: %d redeliveries", src, strings.Join(terms, " + "), durText(t), bc.MaxDeliver, n)
	}
	return r
}

func (f *finder) horizon(cp, subject string, c *Consumer, b *Broker, s *Stream, bc *BrokerConsumer, exp []string) {
	life := c.Dedupe.Lifetime.D()
	r := redeliveries(b, s, bc)
	if ct, ok := cutByAge(b, s, bc); ok {
		f.horizonByAge(cp, subject, c, r, ct, life, exp)
		return
	}
	if !r.Unlimited && r.Last() < life {
		return
	}
	tl := []Mark{{Text: "delivery 1: effect done, record " + keyText(c.Dedupe.Key) + " written, the ack lost"},
		{At: Duration(life), Text: "the de-dupe record expires"}}
	var arith []string
	summary := ""
	if r.Unlimited {
		arith = append(arith, fmt.Sprintf("%s; record lifetime %s is finite", r.How, life))
		summary = fmt.Sprintf("the de-dupe record lives %s but redeliveries have no bound: one after %s repeats %s", life, life, strings.Join(exp, ", "))
		tl = append(tl, Mark{At: Duration(life), Label: "t>" + life.String(), Text: "a redelivery: no record, effect done again"})
	} else {
		arith = append(arith, fmt.Sprintf("redelivery at %s >= record lifetime %s: the record is gone when it comes back (%s)", durText(r.Last()), life, r.How))
		for k, at := range r.At {
			if at < life {
				arith = append(arith, fmt.Sprintf("redelivery at %s < record lifetime %s: the record is found (not a hazard)", at, life))
				tl = append(tl, Mark{At: Duration(at), Text: fmt.Sprintf("delivery %d: record found, skipped (the ack lost again)", r.Delivery[k])})
			} else {
				tl = append(tl, Mark{At: Duration(at), Text: fmt.Sprintf("delivery %d: no record, %s done again", r.Delivery[k], strings.Join(exp, ", "))})
			}
		}
		summary = fmt.Sprintf("the de-dupe record lives %s, the last redelivery comes at %s: it repeats %s", life, durText(r.Last()), strings.Join(exp, ", "))
	}
	f.add("record-shorter-than-redelivery", subject, cp+".dedupe.lifetime", summary, arith, tl...)
}

// replayReach is how far back a manual replay can reach on the stream.
func replayReach(c *Consumer, s *Stream) (reach time.Duration, unlimited bool, how string) {
	switch s.Retention {
	case RetentionWorkQueue, RetentionInterest:
		return 0, false, fmt.Sprintf("retention %s: an acked message is removed, nothing acked is left to replay", s.Retention)
	}
	if c.MaxReplayAge != nil {
		if s.MaxAge == 0 || c.MaxReplayAge.D() < s.MaxAge.D() {
			return c.MaxReplayAge.D(), false, fmt.Sprintf("maxReplayAge %s", c.MaxReplayAge)
		}
	}
	if s.MaxAge == 0 {
		return 0, true, "retention limits with no maxAge: a manual replay can reach any message ever published"
	}
	return s.MaxAge.D(), false, fmt.Sprintf("retention limits, maxAge %s", s.MaxAge)
}

func (f *finder) replay(cp, subject string, c *Consumer, b *Broker, s *Stream, exp []string) {
	life := c.Dedupe.Lifetime.D()
	reach, unlimited, how := replayReach(c, s)
	if !unlimited && reach < life {
		return
	}
	reachText := "any age"
	if !unlimited {
		reachText = reach.String()
	}
	arith := []string{fmt.Sprintf("a manual replay reaches %s back (%s) >= record lifetime %s", reachText, how, life)}
	if c.MaxReplayAge == nil {
		arith = append(arith, "maxReplayAge not declared: the stream's retention bounds the replay")
	}
	tl := []Mark{{Text: "effect done, record " + keyText(c.Dedupe.Key) + " written"},
		{At: Duration(life), Text: "the de-dupe record expires"}}
	if unlimited {
		tl = append(tl, Mark{At: Duration(life), Label: "any later t", Text: "an operator replays the stream: no record, effect done again"})
	} else {
		tl = append(tl, Mark{At: Duration(reach), Text: "an operator replays the stream (the message is still kept): no record, effect done again"})
	}
	f.add("record-shorter-than-replay", subject, cp+".dedupe.lifetime",
		fmt.Sprintf("the de-dupe record lives %s, a manual replay of %s/%s reaches %s back: it repeats %s", life, b.Name, s.Name, reachText, strings.Join(exp, ", ")),
		arith, tl...)
}
