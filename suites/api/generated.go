package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/httpfault"
	"github.com/onceproof/tck/internal/spec"
)

// The generated rules: API-5.1 a seeded schedule over replicas, time and
// kills checked against the model (model.go); API-5.2 repeats spread up to
// the horizon; API-5.3 kills inside a request. API-1.6 is the enumerated
// check of what is one id and what is two.

// The operations of API-5.1's schedule and their frequencies, stated in its
// evidence.
const (
	opCreate = "create (first request of a key)"
	opRepeat = "repeat (same key and payload)"
	opOther  = "other payload (same key, one field changed)"
	opRead   = "read by id"
	opPair   = "two creates of one key at once on two replicas"
	opKill   = "kill and restart between requests"
	opCrash  = "kill inside a create's handling"
)

var frequencies = []struct {
	op string
	p  float64
}{{opRepeat, 0.22}, {opOther, 0.14}, {opRead, 0.26}, {opPair, 0.10}, {opKill, 0.04}, {opCrash, 0.06}} // the rest: opCreate

// The plan of API-5.1 (a budget of well under a second on a local service).
const (
	genSteps   = 48
	genSlots   = 14
	genPauses  = 3
	genHorizon = 200 * time.Millisecond
	// shrinking replays the failing schedule's parts: at most this many
	// replays, in at most this long.
	shrinkReplays = 40
	shrinkBudget  = 15 * time.Second
)

type gop struct {
	Kind string
	Slot int
	P    int     // the payload (opOther: 1..)
	Frac float64 // opCrash: when in the create's handling the kill comes, as a fraction of its latency
}

func frequencyLine() string {
	parts := []string{}
	rest := 1.0
	for _, f := range frequencies {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", f.op, 100*f.p))
		rest -= f.p
	}
	return fmt.Sprintf("per step: %s; else %s (%.0f%%); kills need a restartable target, else they are reads", strings.Join(parts, ", "), opCreate, 100*rest)
}

// schedule draws API-5.1's operations from seed.
func schedule(seed int64, instances int, restartable bool) gen.Schedule[gop] {
	used := 0
	return gen.NewSchedule(seed, gen.Plan{Steps: genSteps, Instances: instances, Horizon: genHorizon, Pauses: genPauses}, func(src *gen.Source, i int) gop {
		rnd := src.Rand()
		x := rnd.Float64()
		kind := opCreate
		for _, f := range frequencies {
			if x < f.p {
				kind = f.op
				break
			}
			x -= f.p
		}
		if i == 0 || (kind != opPair && kind != opCrash && used == 0) {
			kind = opCreate
		}
		if !restartable && (kind == opKill || kind == opCrash) {
			kind = opRead
		}
		op := gop{Kind: kind}
		switch kind {
		case opCreate, opPair, opCrash:
			// A key not used yet when there is one, else a repeat.
			if used < genSlots {
				op.Slot = used
				used++
			} else {
				op.Slot = rnd.IntN(genSlots)
			}
			op.Frac = rnd.Float64()
		case opOther:
			op.Slot, op.P = rnd.IntN(max(used, 1)), 1+rnd.IntN(8)
		default:
			op.Slot = rnd.IntN(max(used, 1))
		}
		return op
	})
}

// slots are the keys of a schedule's play: fresh intents, and (from the
// third on, one of every twin kind first) twins of earlier ones; a twin
// drawn after those may be a pair (API-1.6's URL, metacharacter, hash or
// script pairs), its two keys new.
func (v *values) slots(rule string, n int) []slot {
	kinds := v.twinKinds()
	pairs := v.pairKinds()
	var out []slot
	for i := 0; len(out) < n; i++ {
		if len(out) >= 2 && (i-2 < len(kinds) || v.intn(3) == 0) {
			kind := kinds[(i-2)%len(kinds)]
			if i-2 >= len(kinds) {
				all := append(slices.Clone(kinds), pairs...)
				kind = all[v.intn(len(all))]
			}
			if slices.Contains(pairs, kind) {
				if len(out)+2 > n {
					continue
				}
				ps := v.pairsOf(kind)
				p := ps[v.intn(len(ps))]
				if v.intn(2) == 0 {
					p.A, p.B = p.B, p.A
				}
				base, twin := v.pairIntents(rule, p.A, p.B)
				s := newSlot(v.d, twin)
				s.twin, s.of = kind, len(out)
				out = append(out, newSlot(v.d, base), s)
				continue
			}
			base := v.intn(len(out))
			if kind == twinTail {
				// The long base a tail twin needs.
				s := newSlot(v.d, v.intentWith(v.id(rule, idLong)))
				out = append(out, s)
				base = len(out) - 1
			}
			if kind == twinNFD {
				s := newSlot(v.d, v.intentWith(v.id(rule, idUnicode)))
				out = append(out, s)
				base = len(out) - 1
			}
			// Not a second twin of one kind of one base: that is the same key.
			if t, ok := v.twinOf(out[base].in, kind); ok && len(out) < n && !taken(out, t) {
				s := newSlot(v.d, t)
				s.twin, s.of = kind, base
				out = append(out, s)
			}
			continue
		}
		out = append(out, newSlot(v.d, v.newIntent(rule)))
	}
	return out[:n]
}

// taken reports whether a slot has in's scope and id already.
func taken(slots []slot, in intent) bool {
	for _, s := range slots {
		if s.in.id == in.id && s.in.scope == in.scope {
			return true
		}
	}
	return false
}

// player plays schedules against the target: each play on fresh keys (a
// new salt, the seed's shapes), so a replay of a part of a schedule meets
// nothing of an earlier play.
type player struct {
	r       *spec.R
	t       Target
	seed    int64
	urls    []string
	tally   gen.Tally
	classes string
	kills   struct{ inside, after int }
}

// outcome is one play's: the history, the check's verdict, and the kit's
// own trouble (a restart that failed).
type outcome struct {
	ops     []history.Op
	calls   []gen.Call[mIn, mOut]
	verdict gen.Verdict
	first   string // the first answer the model refuses, in call order
	trouble error
}

func (p *player) play(ctx context.Context, steps []gen.Step[gop], count bool) outcome {
	d := p.t.Desc
	v := newValues(d, p.seed, "API-5.1")
	slots := v.slots("API-5.1", genSlots)
	rec := history.New()
	clients := make([]*client, len(p.urls))
	for i, u := range p.urls {
		clients[i] = newClient(d, u, 4, true, p.t.TLS)
		clients[i].rec = rec
		defer clients[i].close()
	}
	hist := gen.NewHistory[mIn, mOut]()
	var mu sync.Mutex // latency, written by a pair's two creates
	latency := 20 * time.Millisecond
	var proxy *httpfault.Proxy
	defer func() {
		if proxy != nil {
			_ = proxy.Close()
		}
	}()
	restart := func() error {
		h := rec.Invoke("kit", "kill and restart the service", "")
		if err := p.t.Restart(ctx); err != nil {
			h.Fail(err.Error())
			return fmt.Errorf("the kit could not restart the service: %w", err)
		}
		h.OK("listening again")
		clients[0].hc.CloseIdleConnections()
		return nil
	}
	create := func(c *client, inst int, s slot, pi int, overlap bool, what string) {
		in := s.payload(pi)
		done := hist.Begin(inst, mIn{Key: s.key(), P: pi, Overlap: overlap, What: what})
		start := time.Now()
		a := c.create(ctx, fmt.Sprintf("replica-%d", inst+1), in.id, in.scope, in.body)
		if a.Err == nil {
			mu.Lock()
			latency = (latency*3 + time.Since(start)) / 4
			mu.Unlock()
		}
		done(outOf(a))
	}
	var trouble error
	_, _ = gen.Play(ctx, steps, func(ctx context.Context, st gen.Step[gop]) error {
		op := st.Op
		s := slots[op.Slot]
		inst := st.Instance % len(clients)
		c := clients[inst]
		if count {
			p.tally.Add(op.Kind)
			if s.twin != "" {
				p.tally.Add("on a " + s.twin)
			}
		}
		label := fmt.Sprintf("%s: key %d (id %s)", op.Kind, op.Slot, clip(s.in.id, 40))
		switch op.Kind {
		case opCreate, opRepeat:
			create(c, inst, s, 0, false, label)
		case opOther:
			create(c, inst, s, 1+(op.P-1)%len(s.others), false, label)
		case opRead:
			done := hist.Begin(inst, mIn{Key: s.key(), Read: true, What: label})
			a := c.read(ctx, s.in.id, s.in.scope)
			o := outOf(a)
			if a.Err == nil {
				o.Shows = s.shows(a.Body)
			}
			done(o)
		case opPair:
			var wg sync.WaitGroup
			for k := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					create(clients[(inst+k)%len(clients)], (inst+k)%len(clients), s, 0, true, label)
				}()
			}
			wg.Wait()
		case opKill:
			if err := restart(); err != nil {
				trouble = err
				return err
			}
		case opCrash:
			if proxy == nil {
				var err error
				if proxy, err = httpfault.StartTLS(p.urls[0], p.t.TLS); err != nil {
					trouble = fmt.Errorf("the kit could not start its fault proxy: %w", err)
					return trouble
				}
			}
			mu.Lock()
			delay := time.Duration(op.Frac * float64(latency))
			mu.Unlock()
			_, inside, err := crash(ctx, proxy, clients[0], s.in, delay, restart, hist, mIn{Key: s.key(), What: label + " (killed inside)"})
			if err != nil {
				trouble = err
				return err
			}
			if count {
				if inside {
					p.kills.inside++
				} else {
					p.kills.after++
				}
			}
		}
		return nil
	})
	if count {
		p.classes = v.classes()
	}
	calls := hist.Calls()
	out := outcome{ops: rec.Ops(), calls: calls, trouble: trouble}
	if trouble != nil {
		return out
	}
	m := model(d)
	out.verdict = gen.Check(m, calls, 10*time.Second)
	if out.verdict == gen.Violation {
		sorted := append([]gen.Call[mIn, mOut](nil), calls...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
		if i := gen.CheckSequential(m, sorted); i >= 0 {
			out.first = m.Describe(sorted[i].Input, sorted[i].Output)
		}
	}
	return out
}

// crash sends in's create through the proxy, kills the service after
// delay inside its handling, restarts it and returns what the service had
// answered (no answer when the kill came first).
func crash(ctx context.Context, proxy *httpfault.Proxy, c *client, in intent, delay time.Duration, restart func() error, hist *gen.History[mIn, mOut], mi mIn) (mOut, bool, error) {
	hold := proxy.HoldNext(func(req *http.Request, body []byte) bool { return string(body) == string(in.body) })
	via := c.with(proxy.URL(), false)
	defer via.close()
	done := hist.Begin(0, mi)
	sent := make(chan answer, 1)
	go func() { sent <- via.create(ctx, "kit", in.id, in.scope, in.body) }()
	select {
	case <-hold.Forwarded():
	case a := <-sent:
		return mOut{}, false, fmt.Errorf("the fault proxy did not forward the create it was to hold (the kit's client got %s)", a)
	case <-time.After(10 * time.Second):
		return mOut{}, false, fmt.Errorf("the fault proxy did not see the create it was to hold")
	}
	time.Sleep(delay)
	err := restart()
	dropped := hold.Release()
	<-sent
	if err != nil {
		return mOut{}, false, err
	}
	var o mOut
	if dropped.Err != nil {
		o = mOut{NoAnswer: true, Shows: -1}
	} else {
		o = outOf(answer{Status: dropped.Status, Header: dropped.Header, Body: dropped.Body})
	}
	c.rec.Note("proxy", "killed the service inside the request", in.id, fmt.Sprintf("after %s; the service had %s", delay.Round(time.Microsecond), map[bool]string{true: "not answered", false: "answered " + fmt.Sprint(dropped.Status)}[dropped.Err != nil]))
	done(o)
	return o, dropped.Err != nil, nil
}

func registerGenerated(s *spec.Set, t Target) {
	s.It("API-1.6", func(r *spec.R) {
		u := begin(r, t)
		reps := spread(u.c, t)
		r.DeferCleanup(func() {
			for _, c := range reps {
				c.close()
			}
		})
		trials, err := u.v.twinTrials(r.ID)
		if err != nil {
			r.Unknown("%v", err)
		}
		kinds := append(u.v.twinKinds(), u.v.pairKinds()...)
		r.Ev.Figure("twin kinds", strings.Join(kinds, "; "), "")
		perKind := gen.Tally{}
		for _, tr := range trials {
			perKind.Add(shortKind(tr.kind))
		}
		r.Ev.Figure("twin pairs", len(trials), "each created, read, repeated and counted")
		r.Ev.Figure("pairs by kind", perKind.String(), "")
		r.Ev.Figure("replicas", len(reps), "")
		if len(reps) > 1 {
			r.Ev.Notef("the steps of each pair rotate over the %d replicas (the history names each replica-N): pair k creates its first id on replica k, its twin on replica k+1, and its reads, repeats and counts go to replicas k+1 to k+6 in turn, so with two every step after a creation reaches the replica that did not create that id", len(reps))
		}
		for k, tr := range trials {
			u.twins(r.Context(), reps, k, tr)
		}
		r.Ev.Notef("%d pairs of %d kinds: each twin was created as its own resource and read back with its own payload; the same bytes repeated got the declared repeat answer", len(trials), len(kinds))
	})

	// Alone: its schedule kills and restarts the service.
	s.ItAlone("API-5.1", func(r *spec.R) {
		seed := gen.Seed(t.Seed)
		urls := append([]string{t.URL}, t.Replicas...)
		p := &player{r: r, t: t, seed: seed, urls: urls, tally: gen.Tally{}}
		sched := schedule(seed, len(urls), t.Restart != nil)
		r.Ev.Figure("seed", seed, "tck run --seed replays the schedule")
		r.Ev.Figure("operations", len(sched.Steps), "")
		r.Ev.Figure("replicas", len(urls), "")
		r.Ev.Figure("frequencies", frequencyLine(), "")
		r.Ev.Figure("time horizon", gen.Waited(sched.Steps).Seconds(), "s of pauses spread over the schedule")
		if len(urls) == 1 {
			r.Ev.Notef("one instance: the target declares no replicas (a cmd: target whose command holds {data} is started twice over one data directory)")
		}
		if t.Restart == nil {
			r.Ev.Notef("no kills: the kit did not start the service and cannot restart it")
		}
		out := p.play(r.Context(), sched.Steps, true)
		r.Ev.Figure("operations run", p.tally.String(), "")
		r.Ev.Figure("value classes", p.classes, "")
		r.Ev.Figure("kills inside a request's handling", p.kills.inside, "")
		r.Ev.Figure("kills after the service answered", p.kills.after, "")
		r.Ev.Record(out.ops)
		if out.trouble != nil {
			r.Unknown("%v (seed %d)", out.trouble, seed)
		}
		answered := 0
		for _, c := range out.calls {
			if !c.Output.NoAnswer {
				answered++
			}
		}
		r.Ev.Figure("calls answered", answered, fmt.Sprintf("of %d: a call without an answer may take effect at any time, so it constrains nothing", len(out.calls)))
		if answered*4 < len(out.calls) {
			// Calls without an answer are open: a history of them fits any
			// model, so it passes nothing (a service that is not listening).
			r.Unknown("only %d of %d calls got an answer: too few to check the service against the model (seed %d)", answered, len(out.calls), seed)
		}
		switch out.verdict {
		case gen.Undecided:
			r.Unknown("the linearizability check ran out of time on %d calls (seed %d)", len(out.calls), seed)
		case gen.Linearizable:
			r.Ev.Notef("%d calls over %d replica(s) (seed %d): every answer is one the model allows, in an order consistent with their times", len(out.calls), len(urls), seed)
			return
		}
		// Shrink: the smallest part of the schedule that still fails, each
		// part replayed on fresh keys.
		smallest, last := sched.Steps, out
		got, replays := gen.Shrink(sched.Steps, func(part []gen.Step[gop]) bool {
			o := p.play(r.Context(), part, false)
			if o.trouble == nil && o.verdict == gen.Violation {
				last = o
				return true
			}
			return false
		}, shrinkBudget, shrinkReplays)
		if len(got) < len(smallest) {
			smallest = got
		}
		r.Ev.Figure("shrunk to", len(smallest), "operations")
		r.Ev.Figure("shrinking replays", replays, "")
		r.Ev.Smallest(last.ops)
		r.Expect(out.verdict).To(gomega.Equal(gen.Linearizable),
			"seed %d: the answers of the generated schedule are not linearizable against the model; the smallest failing schedule has %d operations (%s), its first refused answer: %s. Replay: tck run --suite api --rule API-5.1 --seed %d",
			seed, len(smallest), describeSteps(smallest), last.first, seed)
	})

	registerRetention(s, t)

	// Alone: it kills the service inside a request.
	s.ItAlone("API-5.3", func(r *spec.R) {
		u := begin(r, t)
		proxy, err := httpfault.StartTLS(t.URL, t.TLS)
		if err != nil {
			r.Unknown("the kit could not start its fault proxy: %v", err)
		}
		r.DeferCleanup(func() { _ = proxy.Close() })
		restart := func() error {
			h := u.c.rec.Invoke("kit", "kill and restart the service", "")
			if err := t.Restart(r.Context()); err != nil {
				h.Fail(err.Error())
				return fmt.Errorf("the kit could not restart the service: %w", err)
			}
			h.OK("listening again")
			u.c.hc.CloseIdleConnections()
			return nil
		}
		m := model(u.d)
		var inside, after int
		for trial := range crashTrials {
			// The latency of a create now, so the kill lands within it.
			warm := u.v.newIntent(r.ID)
			start := time.Now()
			u.create(warm, "a create that measures the latency")
			latency := time.Since(start)
			in := u.v.newIntent(r.ID)
			s := newSlot(u.d, in)
			hist := gen.NewHistory[mIn, mOut]()
			// Stratified: trial k kills in the k-th sixth of the latency.
			delay := time.Duration(float64(latency) * (float64(trial) + float64(u.v.intn(1000))/1000) / crashTrials)
			_, in1, err := crash(r.Context(), proxy, u.c, in, delay, restart, hist, mIn{Key: s.key(), What: "the create killed inside"})
			if err != nil {
				r.Unknown("%v", err)
			}
			if in1 {
				inside++
			} else {
				after++
			}
			// Read, repeat, repeat, read: each answer against the model.
			read := func(what string) {
				done := hist.Begin(0, mIn{Key: s.key(), Read: true, What: what})
				a := u.c.read(r.Context(), in.id, in.scope)
				o := outOf(a)
				if a.Err == nil {
					o.Shows = s.shows(a.Body)
				}
				done(o)
			}
			read("the read after the restart")
			for _, what := range []string{"the repeat after the restart", "a second repeat"} {
				done := hist.Begin(0, mIn{Key: s.key(), What: what})
				done(outOf(u.c.create(r.Context(), "kit", in.id, in.scope, in.body)))
			}
			read("the last read")
			calls := hist.Calls()
			for _, c := range calls {
				if c.Output.NoAnswer && c.Input.What != "the create killed inside" {
					r.Unknown("the service did not answer %s after the restart", c.Input.What)
				}
			}
			if i := gen.CheckSequential(m, calls); i >= 0 {
				r.Ev.Figure("kills inside a request's handling", inside, "")
				r.Ev.Smallest(u.c.rec.Ops())
				r.Expect(i).To(gomega.Equal(-1), "a create killed %s after it reached the service (%s): %s is not what the contract allows after the restart (history: %s)",
					delay.Round(time.Microsecond), map[bool]string{true: "before it answered", false: "after it answered"}[in1], m.Describe(calls[i].Input, calls[i].Output), describeCalls(m, calls))
			}
			u.one(in, "after the kill and the repeats")
		}
		r.Ev.Figure("kills inside a request's handling", inside, "")
		r.Ev.Figure("kills after the service answered", after, "")
		r.Ev.Notef("%d creates killed at points spread over their handling (%d before the service answered): after each restart the read and two repeats are what the contract allows", crashTrials, inside)
	})
}

// crashTrials is how many creates API-5.3 kills.
const crashTrials = 6

func describeSteps(steps []gen.Step[gop]) string {
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = fmt.Sprintf("%s on key %d at replica %d", strings.SplitN(st.Op.Kind, " (", 2)[0], st.Op.Slot, st.Instance+1)
		if st.Delay > 0 {
			parts[i] = fmt.Sprintf("wait %s, %s", st.Delay.Round(time.Millisecond), parts[i])
		}
	}
	return strings.Join(parts, "; ")
}

func describeCalls(m gen.Model[mState, mIn, mOut], calls []gen.Call[mIn, mOut]) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = m.Describe(c.Input, c.Output)
	}
	return strings.Join(parts, "; ")
}
