package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/faultproxy"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// replyTimeout is how long a publish whose reply the proxy dropped waits
// before the producer gives up (BR-1.6): the producer "only sees a timeout".
const replyTimeout = 500 * time.Millisecond

// dropGrace is how long BR-1.6 waits, after the producer gave up, for the
// reply the proxy is to drop.
const dropGrace = 2 * time.Second

func window(c mq.Capabilities) time.Duration { return c.DedupeWindow }

// applied is the window the rules' scratch topics are created with: the
// server's own where Windows.DedupeWindow says so, else the declared one.
func applied(w kithooks.Windows, c mq.Capabilities) time.Duration {
	if w.DedupeWindow > 0 && c.DedupeWindow > 0 {
		return w.DedupeWindow
	}
	return c.DedupeWindow
}

// span is the longer of the declared and the applied window: what a rule
// that waits past a window must wait.
func span(w kithooks.Windows, c mq.Capabilities) time.Duration { return max(window(c), applied(w, c)) }

// appliedNote records on a rule that its scratch topic has the server's
// window, not the declared one.
func (f *fixture) appliedNote() {
	if f.t.dedupeNote != "" {
		f.ev.Notef("%s", f.t.dedupeNote)
	}
	if a := applied(f.w, f.t.Caps); a != window(f.t.Caps) {
		f.ev.Figure("scratch topic window (the server's)", a.Seconds(), "s")
	}
}

func registerDedupe(p *plan) {
	none := func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }

	p.set.Background("BR-1.1", p.workload("BR-1.1", none, func(f *fixture) judge {
		f.appliedNote()
		topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
		if err != nil {
			return f.failed(err, "creating the topic")
		}
		id := f.name("msg")
		a1, err1 := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte("E9 " + id)})
		a2, err2 := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte("E9 " + id)})
		n, errR := f.intents(topic, "E9 "+id)
		return func(r *spec.R) {
			f.must(r, err1, "first publish")
			f.must(r, err2, "repeated publish")
			f.must(r, errR, "reading the topic back")
			r.Expect(n).To(gomega.Equal(1), "a publish repeated with the same id inside the window must be stored once; copies stored")
			r.Expect(a2.Duplicate || a2.Position == a1.Position).To(gomega.BeTrue(),
				"the second reply must say duplicate or return the first position (first %s, second %s)", describeAck(a1), describeAck(a2))
			if f.t.Caps.DuplicateFlag {
				r.Expect(a2.Duplicate).To(gomega.BeTrue(), "the broker declares a duplicate flag, but the second reply does not carry it")
			}
			r.Ev.Notef("stored once; the second reply: %s", describeAck(a2))
		}
	}))

	p.set.Background("BR-1.2", p.workload("BR-1.2", func(w kithooks.Windows, c mq.Capabilities) time.Duration { return span(w, c) + 2*w.Tolerance }, measureWindow))

	p.set.Background("BR-1.3", p.workload("BR-1.3", func(w kithooks.Windows, c mq.Capabilities) time.Duration { return span(w, c) * 12 / 10 }, func(f *fixture) judge {
		W := window(f.t.Caps)
		f.appliedNote()
		topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
		if err != nil {
			return f.failed(err, "creating the topic")
		}

		idA, idB := f.name("branchA"), f.name("branchB")
		if _, err := f.publish("producer", topic, mq.Message{ID: idA, Payload: []byte(idA)}); err != nil {
			return f.failed(err, "first publish, branch A")
		}
		t0 := time.Now()
		if _, err := f.publish("producer", topic, mq.Message{ID: idB, Payload: []byte(idB)}); err != nil {
			return f.failed(err, "first publish, branch B")
		}
		tB := time.Now()
		f.sleepUntil(t0.Add(W * 8 / 10))
		aA, errA := f.publish("branch-A", topic, mq.Message{ID: idA, Payload: []byte(idA)})
		atA := time.Since(t0)
		f.sleepUntil(tB.Add(W * 12 / 10))
		aB, errB := f.publish("branch-B", topic, mq.Message{ID: idB, Payload: []byte(idB)})
		atB := time.Since(tB)
		nA, errRA := f.intents(topic, idA)
		nB, errRB := f.intents(topic, idB)
		f.ev.Figure("declared window", W.Seconds(), "s")
		f.ev.Figure("branch A retry at", atA.Seconds(), "s")
		f.ev.Figure("branch B retry at", atB.Seconds(), "s")
		return func(r *spec.R) {
			f.must(r, errA, "branch A retry at 0.8 of the window")
			f.must(r, errB, "branch B retry at 1.2 of the window")
			f.must(r, errRA, "reading back")
			f.must(r, errRB, "reading back")
			r.Ev.Notef("branch A (0.8 window, %.2fs): %s, %d copies; branch B (1.2 window, %.2fs): %s, %d copies",
				atA.Seconds(), describeAck(aA), nA, atB.Seconds(), describeAck(aB), nB)
			if nA != 1 && atA >= W-f.w.Tolerance {

				f.unknown(r, "%s (the window is %s): stored again, which says nothing", stall.Late("branch A's retry at 0.8 of the window", W*8/10, atA), W)
			}
			r.Expect(nA).To(gomega.Equal(1), "branch A: a retry at 0.8 of the window (%.2fs) must be dropped; copies stored", atA.Seconds())
			r.Expect(nB).To(gomega.Equal(2), "branch B: a retry at 1.2 of the window (%.2fs) must be stored again; copies stored", atB.Seconds())
		}
	}))

	p.set.Background("BR-1.4", p.workload("BR-1.4", func(w kithooks.Windows, c mq.Capabilities) time.Duration { return span(w, c) * 12 / 10 }, func(f *fixture) judge {
		W := window(f.t.Caps)
		f.appliedNote()
		topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
		if err != nil {
			return f.failed(err, "creating the topic")
		}

		hit, control := f.name("hit"), f.name("control")
		if _, err := f.publish("producer", topic, mq.Message{ID: hit, Payload: []byte(hit)}); err != nil {
			return f.failed(err, "first publish")
		}
		t0 := time.Now()
		if _, err := f.publish("producer", topic, mq.Message{ID: control, Payload: []byte(control)}); err != nil {
			return f.failed(err, "first publish of the control")
		}
		f.sleepUntil(t0.Add(W / 2))
		_, errHit := f.publish("producer", topic, mq.Message{ID: hit, Payload: []byte(hit)})
		nAtHit, errR0 := f.intents(topic, hit)
		f.sleepUntil(t0.Add(W * 12 / 10))
		aLate, errLate := f.publish("producer", topic, mq.Message{ID: hit, Payload: []byte(hit)})
		ctlAt := time.Since(t0)
		aCtl, errCtl := f.publish("producer", topic, mq.Message{ID: control, Payload: []byte(control)})
		ctlLate := stall.Since(t0)
		nHit, errR1 := f.intents(topic, hit)
		nCtl, errR2 := f.intents(topic, control)
		refreshed := nHit == 1
		f.ev.Figure("declared refresh on hit", f.t.Caps.DedupeRefreshOnHit, "")
		f.ev.Figure("measured refresh on hit", refreshed, "")
		if nAtHit == 1 && nCtl != 1 {

			f.ev.Compare(verdict.Comparison{Setting: "de-dupe window refreshed on a hit", Declared: fmt.Sprint(f.t.Caps.DedupeRefreshOnHit), Actual: fmt.Sprint(refreshed),
				Source: "measured", Match: refreshed == f.t.Caps.DedupeRefreshOnHit})
		}
		return func(r *spec.R) {
			for _, e := range []error{errHit, errLate, errCtl, errR0, errR1, errR2} {
				f.must(r, e, "publishing and reading back")
			}
			if nAtHit != 1 {
				f.unknown(r, "the duplicate at half the window was stored (%d copies), so there was no hit to refresh anything (see BR-1.1, BR-1.2)", nAtHit)
			}
			if nCtl == 1 {
				f.unknown(r, "%s", controlDropped(W, f.w.Tolerance, ctlAt, ctlLate, describeAck(aCtl)))
			}
			r.Ev.Notef("duplicate hit at 0.5 window, retry at 1.2 window: %s (%d copies); control: %d copies; refresh on hit measured %v, declared %v",
				describeAck(aLate), nHit, nCtl, refreshed, f.t.Caps.DedupeRefreshOnHit)
			r.Expect(refreshed).To(gomega.Equal(f.t.Caps.DedupeRefreshOnHit), "whether a duplicate hit refreshes the window: measured (want = declared)")
		}
	}))

	p.set.Background("BR-1.5", p.workload("BR-1.5", none, func(f *fixture) judge {
		f.appliedNote()
		topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
		if err != nil {
			return f.failed(err, "creating the topic")
		}
		a, b, c := f.name("a"), f.name("b"), f.name("c")
		same, v1, v2 := "same body "+a, "v1 body "+c, "changed body "+c
		_, e1 := f.publish("producer", topic, mq.Message{ID: a, Payload: []byte(same)})
		_, e2 := f.publish("producer", topic, mq.Message{ID: b, Payload: []byte(same)})
		_, e3 := f.publish("producer", topic, mq.Message{ID: c, Payload: []byte(v1)})
		_, e4 := f.publish("producer", topic, mq.Message{ID: c, Payload: []byte(v2)})
		nSame, r1 := f.intents(topic, same)
		nV1, r2 := f.intents(topic, v1)
		nV2, r3 := f.intents(topic, v2)
		return func(r *spec.R) {
			for _, e := range []error{e1, e2, e3, e4, r1, r2, r3} {
				f.must(r, e, "publishing and reading back")
			}
			r.Expect(nSame).To(gomega.Equal(2), "two ids with equal payloads must both be stored; copies of the payload")
			r.Expect(nV2).To(gomega.Equal(0), "one id with a changed payload must be dropped; copies of the changed payload")
			r.Expect(nV1).To(gomega.Equal(1), "the first payload must be the one kept; copies of it")
			r.Ev.Notef("equal payloads under two ids: both stored; one id with a changed payload: dropped, first payload kept")
		}
	}))

	p.set.Background("BR-1.8", p.workload("BR-1.8", none, distinctIDs))

	p.set.Background("BR-1.6", p.workload("BR-1.6", func(kithooks.Windows, mq.Capabilities) time.Duration { return 2 * replyTimeout }, lostPublishAck))
}

// controlDropped is BR-1.4's reason when its control id, never hit, was
// still dropped when retried ctlAt after its first publish (1.2 of the
// declared window W): the window on this topic lasted longer than
// declared. The kit's retry going out late cannot explain that (a later
// retry is likelier stored); the server's forgetting the id late can, and
// an embedded server forgets on a timer in the kit's own process (NATS:
// the stream's purge timer), late when the kit is, as is a server on the
// same loaded host. So the kit's lateness over the measurement is named
// when it is as long as the excess less the tolerance; otherwise the
// reason says the window was longer on this topic, which BR-1.2 measures
// on a topic of its own.
func controlDropped(W, tol, ctlAt time.Duration, late stall.Span, answer string) string {
	excess := ctlAt - W
	why := fmt.Sprintf("the control id, never hit, was still dropped when retried %.3fs after its first publish (1.2 of the declared window %s; %s): on this topic the window lasted at least %s longer than declared, so refresh cannot be told apart",
		ctlAt.Seconds(), W, answer, excess.Round(time.Millisecond))
	named := late.Paused() || late.Lag >= stall.Floor
	if lost := max(late.Total, late.Lag); named && lost >= excess-tol {
		return fmt.Sprintf("%s, enough to account for it: the server forgets an id on a timer, which on an embedded server runs in the kit's own process (and on a server on the same loaded host is late alike), so the longer window may be the kit's lateness, not the target's: %s", late, why)
	}
	if named {
		return fmt.Sprintf("%s (%s, less than the excess, so it does not account for it; BR-1.2 measures the window on a topic of its own)", why, late)
	}
	return why + " (BR-1.2 measures the window on a topic of its own)"
}

// measureWindow is BR-1.2: probes retry the same id at offsets around the
// declared window and the read-back says which were stored again. Each probe
// brackets the broker's own gap between the two copies: a retry that was
// dropped proves the window is longer than the least the gap can have been
// (retry sent - first reply), one stored again proves it shorter than the
// most (retry reply - first sent). Only a bound past the tolerance is a
// fail; a host that delayed the kit's probes widens the bracket, and a
// bracket that cannot place the window's end within the tolerance is
// measured again (up to three times while the budget allows), then unknown.
func measureWindow(f *fixture) judge {
	W, A, tol := window(f.t.Caps), applied(f.w, f.t.Caps), f.w.Tolerance
	f.appliedNote()
	topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: A})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	offsets := []time.Duration{W / 2, W * 3 / 4}
	step := tol / 5
	if step <= 0 {
		step = 10 * time.Millisecond
	}
	for o := W - 2*tol; o <= W+2*tol; o += step {
		if o > W*3/4 {
			offsets = append(offsets, o)
		}
	}
	if A != W {
		// The topic has the server's window: probe around it too, so the
		// measurement says where the real window ends, not only that the
		// declared one does not hold.
		for o := A - 2*tol; o <= A+2*tol; o += step {
			if o > 0 {
				offsets = append(offsets, o)
			}
		}
	}
	var m windowBracket
	attempts := 0
	for attempts < 3 {
		attempts++
		var err error
		m, err = f.probeWindow(topic, offsets, attempts)
		if err != nil {
			return f.failed(err, "probing the window")
		}
		if m.decided(W, tol) {
			break
		}
		// Undecided: measure again only if a whole measurement still fits.
		if dl, ok := f.ctx.Deadline(); ok && time.Until(dl) < span(f.w, f.t.Caps)+4*tol+5*time.Second {
			break
		}
	}
	lastDropped, firstStored := m.lastDropped, m.firstStored
	f.ev.Figure("declared window", W.Seconds(), "s")
	f.ev.Figure("tolerance", tol.Seconds(), "s")
	f.ev.Figure("probes", len(offsets), "per measurement")
	f.ev.Figure("measurements", attempts, "")
	if f.t.Declared == nil {
		f.ev.SetupHazard("the window measured is the kit's own test window (%s) on a scratch stream, not a team's configuration; tck run --profile measures the declared one", W)
	}
	if lastDropped >= 0 {
		f.ev.Figure("last retry dropped at", lastDropped.Seconds(), "s")
	}
	if firstStored >= 0 {
		f.ev.Figure("measured window", firstStored.Seconds(), "s")
		f.ev.Compare(verdict.Comparison{Setting: "de-dupe window", Declared: W.String(), Actual: firstStored.Round(time.Millisecond).String(),
			Source: "measured", Match: m.decided(W, tol) && m.ok(W, tol)})
	} else {
		f.ev.Compare(verdict.Comparison{Setting: "de-dupe window", Declared: W.String(), Actual: "longer than " + lastDropped.Round(time.Millisecond).String(), Source: "measured"})
	}
	return func(r *spec.R) {
		if m.nonMonotonic {
			r.Ev.Notef("a probe was dropped after an earlier probe had been stored again: the window is not sharp")
		}
		r.Ev.Notef("window between %.3fs (last drop) and %.3fs (first stored again), declared %s ± %s, %d measurement(s)", lastDropped.Seconds(), firstStored.Seconds(), W, tol, attempts)
		// Definite answers first: a retry dropped past the tolerance, or
		// one stored again before it.
		f.atMost(r, lastDropped, W+tol, "a retry %.3fs after the first publish was still dropped: the effective window is longer than the declared %s plus the tolerance %s", lastDropped.Seconds(), W, tol)
		if firstStored >= 0 {
			f.atLeast(r, firstStored, W-tol, "the same id was stored again after %.3fs, before the declared window %s minus the tolerance %s", firstStored.Seconds(), W, tol)
		}
		if !m.decided(W, tol) {
			late := stall.Since(f.started)
			r.Unknown("the probes could not place the window's end within the tolerance in %d measurement(s): it lies between %.3fs (last retry dropped) and %s (first stored again), declared %s ± %s; %slate: its probes' sends and replies spread each bracket past the tolerance (a busy host; %s)",
				attempts, lastDropped.Seconds(), storedText(firstStored), W, tol, stall.PhraseLate, late)
		}
	}
}

// windowBracket is one measurement of BR-1.2: the window's end lies after
// lastDropped and before firstStored (-1: no such probe).
type windowBracket struct {
	lastDropped, firstStored time.Duration
	nonMonotonic             bool
}

// decided says whether the bracket settles the declared window W ± tol:
// either bound past the tolerance (a fail), or both inside it (a pass).
func (m windowBracket) decided(W, tol time.Duration) bool {
	if m.lastDropped > W+tol || (m.firstStored >= 0 && m.firstStored < W-tol) {
		return true
	}
	return m.ok(W, tol)
}

// ok says whether the whole bracket lies within W ± tol.
func (m windowBracket) ok(W, tol time.Duration) bool {
	return m.firstStored >= 0 && m.firstStored <= W+tol && m.lastDropped >= W-tol
}

func storedText(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// probeWindow publishes one probe per offset, retries each at its offset and
// reads the topic back: the bracket of this measurement.
func (f *fixture) probeWindow(topic string, offsets []time.Duration, attempt int) (windowBracket, error) {
	type probe struct {
		id            string
		sent, first   time.Time // the first publish went out, its reply came
		offset        time.Duration
		lower, upper  time.Duration // the broker's gap between the copies lies between
		stored, trust bool
	}
	probes := make([]*probe, len(offsets))
	for i, o := range offsets {
		pr := &probe{id: f.name(fmt.Sprintf("m%dprobe%02d", attempt, i)), offset: o}
		pr.sent = time.Now()
		if _, err := f.publish("producer", topic, mq.Message{ID: pr.id, Payload: []byte(pr.id)}); err != nil {
			return windowBracket{}, unsure("first publish of a probe", err)
		}
		pr.first = time.Now()
		probes[i] = pr
	}
	sort.Slice(probes, func(i, j int) bool {
		return probes[i].first.Add(probes[i].offset).Before(probes[j].first.Add(probes[j].offset))
	})
	for _, pr := range probes {
		f.sleepUntil(pr.first.Add(pr.offset))
		sent := time.Now()
		_, err := f.publish("prober", topic, mq.Message{ID: pr.id, Payload: []byte(pr.id)})
		pr.lower, pr.upper = sent.Sub(pr.first), time.Since(pr.sent)
		// The reply is not trusted here; the read-back below is authoritative.
		pr.trust = err == nil
	}
	all, err := f.b.ReadAll(f.ctx, topic)
	if err != nil {
		return windowBracket{}, unsure("reading the topic back", err)
	}
	count := map[string]int{} // copies per probe, known by payload
	for _, s := range all {
		count[string(s.Message.Payload)]++
	}
	sort.Slice(probes, func(i, j int) bool { return probes[i].offset < probes[j].offset })
	m := windowBracket{lastDropped: -1, firstStored: -1}
	for _, pr := range probes {
		if !pr.trust {
			continue
		}
		pr.stored = count[pr.id] > 1
		if pr.stored && (m.firstStored < 0 || pr.upper < m.firstStored) {
			m.firstStored = pr.upper
		}
		if !pr.stored {
			if m.firstStored >= 0 {
				m.nonMonotonic = true
			}
			m.lastDropped = max(m.lastDropped, pr.lower)
		}
	}
	return m, nil
}

// lostPublishAck is BR-1.6: the proxy swallows the broker's reply to one
// publish; the producer sees a timeout and retries, once with the same id
// and once (the hazard) with a fresh id.
func lostPublishAck(f *fixture) judge {
	fault := f.t.Fault
	f.appliedNote()
	topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	var px *faultproxy.Proxy
	if err := f.kitStep("start-proxy", fault.Addr, func() (err error) {
		px, err = faultproxy.Start(fault.Addr, faultproxy.Splitter(fault.Split))
		return err
	}); err != nil {
		return f.failed(err, "starting the fault proxy")
	}
	f.defer_(func() { _ = px.Close() })
	var via mq.Broker
	if err := f.kitStep("open-broker", "through the proxy", func() (err error) {
		via, err = fault.OpenVia(f.ctx, px.Addr())
		return err
	}); err != nil {
		return f.failed(err, "opening the broker through the proxy")
	}
	f.defer_(func() { _ = via.Close() })

	// attempt publishes m with the reply dropped, then retries with retryID.
	var window [2]time.Time // the attempts, for a lateness that kept a drop from happening
	attempt := func(label, retryID string, m mq.Message) (dropped bool, first error, retry mq.PublishAck, retryErr error) {
		if window[0].IsZero() {
			window[0] = time.Now()
		}
		gone := px.DropNext(faultproxy.Match(fault.PublishReply(topic)))
		f.rec.Note("proxy", "arm", label, "drop the next publish reply on "+topic)
		ctx, cancel := context.WithTimeout(f.ctx, replyTimeout)
		_, first = f.publishOn(ctx, via, "producer", topic, m)
		cancel()
		// On a loaded or paused kit the broker's reply can reach the proxy
		// after the producer gave up: wait for it a little, then disarm,
		// so the drop cannot take the retry's reply instead.
		select {
		case <-gone:
			dropped = true
			f.rec.Note("proxy", "dropped", label, "the broker's reply never reached the producer")
		case <-time.After(dropGrace):
			px.Disarm()
			select {
			case <-gone: // dropped just before the disarm
				dropped = true
				f.rec.Note("proxy", "dropped", label, "the broker's reply never reached the producer")
			default:
			}
		}
		window[1] = time.Now()
		m.ID = retryID
		retry, retryErr = f.publishOn(f.ctx, via, "producer", topic, m)
		return
	}
	same := f.name("same")
	d1, e1, r1, re1 := attempt("same-id", same, mq.Message{ID: same, Payload: []byte("intent-1")})
	firstFresh, fresh := f.name("fresh1"), f.name("fresh2")
	d2, e2, r2, re2 := attempt("fresh-id", fresh, mq.Message{ID: firstFresh, Payload: []byte("intent-2")})

	all, errR := f.b.ReadAll(f.ctx, topic)
	errR = unsure("reading the topic back", errR)
	byPayload := map[string]int{}
	for _, s := range all {
		byPayload[string(s.Message.Payload)]++
	}
	return func(r *spec.R) {
		f.must(r, errR, "reading the topic back")
		if !d1 || !d2 {
			f.span = window
			f.unknown(r, "the proxy did not see the publish reply to drop (dropped same-id %v, fresh-id %v): the lost-ack case was not exercised", d1, d2)
		}
		if e1 == nil || e2 == nil {
			f.unknown(r, "a publish whose reply was dropped still returned success (%v, %v)", e1, e2)
		}
		f.must(r, re1, "the retry with the same id")
		f.must(r, re2, "the retry with a fresh id")
		r.Ev.Figure("copies after same-id retry", byPayload["intent-1"], "")
		r.Ev.Figure("copies after fresh-id retry", byPayload["intent-2"], "")
		r.Ev.Notef("same-id retry after a lost ack: %s, %d copies; fresh-id retry: %s, %d copies",
			describeAck(r1), byPayload["intent-1"], describeAck(r2), byPayload["intent-2"])
		r.Expect(byPayload["intent-1"]).To(gomega.Equal(1), "after a lost publish ack, a retry with the same id must leave exactly one copy")
		if byPayload["intent-2"] < 2 {
			f.unknown(r, "the publish whose ack was lost was not stored (%d copies of the fresh-id intent), so the lost-ack case did not happen as staged", byPayload["intent-2"])
		}
		r.Expect(byPayload["intent-2"]).To(gomega.Equal(2), "a retry with a fresh id after a lost ack leaves two copies")
		freshIDHazard(f.t.Declared, r, byPayload["intent-2"])
	}
}

// idPairs are ids that a client or broker folding case, decoding percent
// escapes, reading wildcards, normalising Unicode, keying by a 32-bit hash
// (Java's String.hashCode: "Aa" and "BB" are both 2112) or cutting ids to a
// column's width would take for one another (BR-1.8); base makes them the
// rule's own.
func idPairs(base string) [][3]string {
	long := base + "-" + strings.Repeat("x", 200)
	return [][3]string{
		{"case", base + "-Order-A", base + "-order-a"},
		{"percent-encoding", base + "/x", base + "%2Fx"},
		{"wildcard", base + ".*", base + ".>"},
		{"unicode", base + "-caf\u00e9", base + "-cafe\u0301"},
		{"hash collision", base + "-Aa", base + "-BB"},
		{"long prefix", long + "1", long + "2"},
	}
}

// distinctIDs is BR-1.8. The same id twice comes first, back to back: the
// control that the window is on (without it nothing here could collide),
// which a slow broker still meets. Then each pair, its two ids back to back:
// each must be stored. One read-back judges them all.
func distinctIDs(f *fixture) judge {
	f.appliedNote()
	topic, err := f.topic("t", mq.TopicConfig{DedupeWindow: applied(f.w, f.t.Caps)})
	if err != nil {
		return f.failed(err, "creating the topic")
	}
	ctl := f.name("control")
	_, c1 := f.publish("producer", topic, mq.Message{ID: ctl, Payload: []byte("control 1 " + ctl)})
	_, c2 := f.publish("producer", topic, mq.Message{ID: ctl, Payload: []byte("control 2 " + ctl)})
	type sent struct {
		label, id, payload string
		ack                mq.PublishAck
		err                error
	}
	var all []sent
	pairs := idPairs(f.name("id"))
	for _, pr := range pairs {
		for i, id := range pr[1:] {
			payload := fmt.Sprintf("BR-1.8 %s %d %s", pr[0], i+1, nonce())
			a, err := f.publish("producer", topic, mq.Message{ID: id, Payload: []byte(payload)})
			all = append(all, sent{pr[0], id, payload, a, err})
		}
	}
	stored, errR := f.payloads(topic)
	return func(r *spec.R) {
		f.must(r, c1, "publishing the control")
		f.must(r, c2, "publishing the control again")
		f.must(r, errR, "reading the topic back")
		if stored["control 2 "+ctl] != 0 {
			r.Unknown("the control id published twice, back to back, was stored twice: the window was not on (BR-1.1), so no distinct id could have been taken for another")
		}
		n := 0
		for _, x := range all {
			f.must(r, x.err, "publishing the %s pair", x.label)
			if stored[x.payload] == 1 && !x.ack.Duplicate {
				n++
				continue
			}
			r.Expect(stored[x.payload]).To(gomega.Equal(1), "the %s pair: id %q was published once, acknowledged (%s), and is a distinct id, so it must be stored once; copies", x.label, safeID(x.id), describeAck(x.ack))
			r.Expect(x.ack.Duplicate).To(gomega.BeFalse(), "the %s pair: the reply to id %q says duplicate, but no publish before it had this id", x.label, safeID(x.id))
		}
		r.Ev.Figure("distinct ids stored", n, fmt.Sprintf("of %d", len(all)))
		r.Ev.Notef("every id of the %d pairs (case, percent-encoding, wildcard, Unicode normalisation, a 32-bit hash collision, a 200-character shared prefix) stored once; the control id's second publish dropped", len(pairs))
	}
}

// safeID shortens an id for a reason line.
func safeID(id string) string {
	if len(id) > 60 {
		return id[:28] + "..." + id[len(id)-28:]
	}
	return id
}
