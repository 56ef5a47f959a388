package eventstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
)

// ES-4.1 plays a seeded schedule (internal/gen) of appends, retries, loads,
// request-id queries and handle reopens, spread over several handles on one
// store and over a time horizon, on pairs of aggregates whose identities a
// store must keep apart (case, Unicode normalization, spaces, a tail past
// 255 characters, a separator moved between two identity parts). Every
// step's answer is checked in full against a sequential model: an append's
// outcome and, for a refusal, the typed conflict's fields; a load's streams
// byte for byte; a query's answer. A failing schedule is shrunk by replaying
// parts of it on fresh aggregates (delta debugging), and the smallest
// failing history is the evidence's minimal timeline.

// The ES-4.1 schedule's size and frequencies (stated in its evidence).
const (
	genSteps     = 260
	genInstances = 3
	genPauses    = 3
	genHorizon   = 1500 * time.Millisecond // the default time horizon
	pLargeBody   = 0.03                    // an event body of 1 MiB and more
	// genForcedLarge appends or creates carry a large body whatever the draw.
	genForcedLarge = 2
	// genBursts steps in the first third of the schedule are bursts of
	// genBurstSize appends to one aggregate: 6000 request ids in all, more
	// than a store-wide cache of a few thousand holds, 1500 streams on one
	// aggregate, more than a per-aggregate window or a load's first page.
	genBursts    = 4
	genBurstSize = 1500
	// genReachBack is how far back a reach-back step looks: one of the 16
	// oldest streams in the store, or of the longest aggregate.
	genReachBack = 16
	// genForcedReachBacks steps, genForcedGap apart after the bursts, are
	// reach-backs, one of each mode.
	genForcedReachBacks = 4
	genForcedGap        = 40
	// genBurstShare per cent of the rule's deadline is the bursts' time at
	// most: 39 s of the default 60, in which a store taking 2-5 ms an
	// append stores all 6000 under go test's Check (one rule at a time),
	// and 1250 beside every other rule of the suite under tck run with
	// two CPU burners (the races share its one lock for their first 30 s).
	// The rest of the schedule, the audit and a shrink take a few seconds.
	// Below genBurstFloor appends (twice a window of the newest 256
	// request ids, five times the 100-stream histories of ES-1.5 and
	// ES-1.8) the bursts reach no depth the enumerated rules do not, and
	// the rule is unknown.
	genBurstShare = 65
	genBurstFloor = 512
)

// opKind is what a generated step does.
type opKind int

const (
	opAppend       opKind = iota // the next version, a fresh request id
	opStale                      // a version already taken (a stale writer)
	opCreate                     // a create of an aggregate that may exist
	opRetry                      // a stored stream's request id again: an exact retry, or at the next version
	opAfterRefusal               // the last refused request id again, at the next version: it must be accepted
	opTwinRequest                // the twin of a stored request id at the next version: another request, accepted
	opLoad                       // a range of versions
	opExists                     // a request id: stored, refused, its twin, or the partner aggregate's
	opReopen                     // close the step's handle and open a new one
	opPartner                    // a request id the pair's other aggregate stored, at this one's next version: accepted (request ids are per aggregate)
	opReachBack                  // one of the oldest stored request ids, long after: retried at its aggregate's next version, or queried
	opBurst                      // genBurstSize appends at the next versions with fresh request ids (forced, not drawn)
)

var opNames = [...]string{"append", "stale append", "create", "retry", "retry after refusal", "twin request id", "load", "exists?", "reopen", "partner's request id", "reach back", "burst"}

func (k opKind) String() string { return opNames[k] }

// The frequency of each kind, in percent (they add up to 100).
var opWeights = [...]int{26, 8, 5, 10, 6, 5, 15, 12, 3, 4, 6, 0}

// genOp is one generated step, abstract: which pair of aggregates and which
// side, which kind, and the values it would write. The concrete version and
// request id are resolved against the model when the step runs, so a part
// of a schedule (when shrinking) still makes sense.
type genOp struct {
	Kind   opKind
	Pair   int
	Side   int // 0 or 1: which aggregate of the pair
	Pick   int // a random choice the step resolves against the model (which version, which request id)
	Req    gen.Text
	Events []genEvent
}

type genEvent struct {
	Name string
	Body gen.Bytes
}

// pairKinds are the ways two aggregates of a pair differ; each is two
// aggregates to the contract (docs/eventstore.md, "Identity").
var pairKinds = func() []string {
	k := []string{"id case", "id NFC/NFD", "id trailing space", "id differs past 255 chars", "tenant case", "tenant leading space", "name NFC/NFD", "context case"}
	for _, sep := range gen.Separators {
		k = append(k, fmt.Sprintf("%q moved between id and tenant", sep))
	}
	// Last: a store that replaces what a topic or file name cannot hold
	// makes these one.
	// Then the other parts past a column or identifier width (a table
	// per aggregate name, a tenant in a schema name).
	return append(k, "id '/' vs '_'", "id ':' vs '-'", "name differs past 255 chars", "context differs past 255 chars", "tenant differs past 255 chars")
}()

// pairOf builds pair k from the rule's drawn words: two aggregates that a
// store must keep apart. nonce makes them fresh for each play.
func pairOf(k int, w [4]string, nonce string) [2]es.AggregateID {
	// The pair's number in the id: no two pairs share an aggregate.
	a := es.AggregateID{Context: "ctx-" + w[0], Name: "Order-" + w[1], ID: nonce + "-p" + strconv.Itoa(k) + "-" + w[2], Tenant: "Acme-" + w[3]}
	b := a
	switch pairKinds[k] {
	case "id case":
		a.ID += "-Mixed"
		b.ID = strings.ToUpper(a.ID)
	case "id NFC/NFD":
		a.ID += "-caf\u00e9"
		b.ID = strings.TrimSuffix(a.ID, "\u00e9") + "e\u0301"
	case "id trailing space":
		b.ID = a.ID + " "
	case "id differs past 255 chars":
		a.ID += "-" + strings.Repeat(w[2]+".", 300/(len(w[2])+1)+1)
		b.ID = a.ID + "y"
		a.ID += "x"
	case "tenant case":
		b.Tenant = strings.ToLower(a.Tenant)
	case "tenant leading space":
		b.Tenant = " " + a.Tenant
	case "name NFC/NFD":
		a.Name += "-caf\u00e9"
		b.Name = strings.TrimSuffix(a.Name, "\u00e9") + "e\u0301"
	case "context case":
		b.Context = strings.ToUpper(a.Context)
	case "name differs past 255 chars":
		a.Name, b.Name = longTwins(a.Name, w[1])
	case "context differs past 255 chars":
		a.Context, b.Context = longTwins(a.Context, w[0])
	case "tenant differs past 255 chars":
		a.Tenant, b.Tenant = longTwins(a.Tenant, w[3])
	case "id '/' vs '_'":
		a.ID, b.ID = a.ID+"/y", a.ID+"_y"
	case "id ':' vs '-'":
		a.ID, b.ID = a.ID+":y", a.ID+"-y"
	default: // a separator moved: (x<sep>y, t) and (x, y<sep>t)
		sep := string(gen.Separators[k-8])
		a.ID, a.Tenant = a.ID+sep+"y", "t"
		b.Tenant = "y" + sep + "t"
	}
	return [2]es.AggregateID{a, b}
}

// longTwins are part made 300+ characters long with word, once ending in
// x and once in y.
func longTwins(part, word string) (string, string) {
	long := part + "-" + strings.Repeat(word+".", 300/(len(word)+1)+1)
	return long + "x", long + "y"
}

// newGenSchedule draws the ES-4.1 schedule of seed.
func newGenSchedule(seed int64, horizon time.Duration, instances int) gen.Schedule[genOp] {
	ids, bodies := gen.ID(gen.IDOptions{}), gen.Body(false)
	large := gen.Body(true).Filter(func(b gen.Bytes) bool { return b.Class == gen.ClassLarge })
	plan := gen.Plan{Steps: genSteps, Instances: instances, Horizon: horizon, Pauses: genPauses}
	forced := 0
	return gen.NewSchedule(seed, plan, func(src *gen.Source, i int) genOp {
		rnd := src.Rand()
		op := genOp{Pair: rnd.IntN(len(pairKinds)), Side: rnd.IntN(2), Pick: rnd.IntN(1 << 20)}
		x := rnd.IntN(100)
		for k, w := range opWeights {
			if x < w {
				op.Kind = opKind(k)
				break
			}
			x -= w
		}
		if i%(genSteps/3/genBursts) == 1 && i/(genSteps/3/genBursts) < genBursts {
			// A burst: small bodies, one event a stream, so that 6000
			// appends stay cheap.
			op.Kind, op.Req = opBurst, gen.Draw(src, ids)
			op.Events = []genEvent{{Name: gen.Draw(src, ids).S, Body: gen.Draw(src, bodies)}}
			return op
		}
		if j := i - genSteps/3; j >= 0 && j%genForcedGap == 0 && j/genForcedGap < genForcedReachBacks {
			// After the bursts, one reach-back of each mode whatever the
			// draw (as the forced large bodies): the store's oldest and
			// the longest aggregate's, retried, then queried.
			op.Kind = opReachBack
			op.Pick = op.Pick&^0b1000011 | (j/genForcedGap%2)*2 | (1-j/genForcedGap/2)<<6
		}
		switch op.Kind {
		case opAppend, opStale, opCreate, opAfterRefusal, opTwinRequest, opRetry, opPartner, opReachBack:
			op.Req = gen.Draw(src, ids)
			for range 1 + rnd.IntN(3) {
				e := genEvent{Name: gen.Draw(src, ids).S}
				if rnd.Float64() < pLargeBody {
					e.Body = gen.Draw(src, large)
				} else {
					e.Body = gen.Draw(src, bodies)
				}
				op.Events = append(op.Events, e)
			}
			// The draw alone leaves about 1 schedule in 400 without a
			// large body in an append or create: the first genForcedLarge
			// of them carry one, so a store that cuts large bodies always
			// meets one the final audit reads back.
			if (op.Kind == opAppend || op.Kind == opCreate) && forced < genForcedLarge {
				forced++
				op.Events[0].Body = gen.Draw(src, large)
			}
		}
		return op
	})
}

// genModel is the sequential model of one aggregate: its streams, and the
// request id of the last refused append.
type genModel struct {
	streams []es.Stream
	refused string
}

func (m *genModel) tail() int { return len(m.streams) }

func (m *genModel) has(req string) bool {
	return slices.ContainsFunc(m.streams, func(s es.Stream) bool { return s.RequestID == req })
}

// expect is what the contract allows for an append of s: success, or the
// set of typed conflicts (more than one where two apply at once, e.g. a
// taken version with a stored request id).
func (m *genModel) expect(s es.Stream) (ok bool, conflicts []string) {
	dup := m.has(s.RequestID)
	switch {
	case s.Version == es.InitialVersion && m.tail() > 0:
		if dup {
			return false, []string{"DuplicateRequestID", "DuplicateAggregateID"}
		}
		return false, []string{"DuplicateAggregateID"}
	case s.Version != m.tail()+1:
		if dup {
			return false, []string{"VersionConflict", "DuplicateRequestID"}
		}
		return false, []string{"VersionConflict"}
	case dup:
		return false, []string{"DuplicateRequestID"}
	}
	return true, nil
}

// esKinds names the conflicts the model allows by their es types.
func esKinds(kinds []string) string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = "es." + k + "Error"
	}
	return strings.Join(out, " or ")
}

// conflictFields checks a typed conflict's fields against the refused
// append: the aggregate and request id asked, and the version asked (not the
// tail, not the stored stream's request id).
func conflictFields(err error, s es.Stream) string {
	var dr *es.DuplicateRequestIDError
	var vc *es.VersionConflictError
	var da *es.DuplicateAggregateIDError
	type fields struct {
		agg     es.AggregateID
		version int
		req     string
	}
	var got fields
	want := fields{s.Aggregate, s.Version, s.RequestID}
	switch {
	case errors.As(err, &dr):
		got = fields{dr.Aggregate, dr.Version, dr.RequestID}
	case errors.As(err, &vc):
		got = fields{vc.Aggregate, vc.Version, vc.RequestID}
	case errors.As(err, &da):
		got = fields{da.Aggregate, s.Version, da.RequestID} // it has no version field
	}
	switch {
	case got.agg != want.agg:
		return fmt.Sprintf("its aggregate is %s, want the one asked, %s", got.agg, want.agg)
	case got.version != want.version:
		return fmt.Sprintf("its version is %d, want the version asked, %d", got.version, want.version)
	case got.req != want.req:
		return fmt.Sprintf("its request id is %s, want the one asked, %s", short(got.req), short(want.req))
	}
	return ""
}

// player plays a schedule (or a part of it) on fresh aggregates and handles
// and reports the first step whose answer the model does not allow.
type player struct {
	t       target
	ctx     context.Context
	words   [4]string
	handles []es.EventStore
	rec     *history.Recorder
	model   map[es.AggregateID]*genModel
	pairs   map[int][2]es.AggregateID
	nonce   string
	tally   gen.Tally // operations and value classes covered
	checked gen.Tally // conflicts checked in full, by kind
	setup   error     // a failure of the kit's or the store's that decides nothing (opening a handle)
	// progress, when set, hears each step played (the rule's R.Progress).
	progress func(done int)
	played   int
	// order is every stored stream, oldest first: what a reach-back step
	// reaches back to.
	order []streamRef
	// The bursts are paced by the store: together they end by burstUntil
	// (zero: no limit), the first taking what it needs first (one whole
	// aggregate of genBurstSize streams is the depth that matters most),
	// and a burst cut short goes on to the next step with what it stored.
	// burstCap, when set, holds a replay's bursts to the sizes the
	// original reached.
	burstUntil   time.Time
	burstCap     map[int]int
	burstReached map[int]int // appends each burst stored, by step index
}

// burstAppends is how many appends the bursts stored, in all and in the
// longest one.
func (p *player) burstAppends() (total, longest int) {
	for _, n := range p.burstReached {
		total += n
		longest = max(longest, n)
	}
	return total, longest
}

type streamRef struct {
	agg es.AggregateID
	i   int // its index in the aggregate's model
}

// stored enters an accepted stream in the model.
func (p *player) stored(agg es.AggregateID, m *genModel, s es.Stream) {
	p.order = append(p.order, streamRef{agg, len(m.streams)})
	m.streams = append(m.streams, s)
}

// reachBack picks one of the oldest stored streams: of the whole store
// (what a store-wide cache or a time to live forgets first), or of the
// aggregate with the longest history (what a per-aggregate window or a
// first page leaves out). Deterministic for a schedule: ties go to the
// aggregate written first.
func (p *player) reachBack(pick int) (es.AggregateID, *genModel, es.Stream, string) {
	k := (pick >> 2) % genReachBack
	if pick%4 < 2 {
		ref := p.order[min(k, len(p.order)-1)]
		m := p.model[ref.agg]
		return ref.agg, m, m.streams[ref.i], fmt.Sprintf("the store's %s oldest stream", ordinal(k+1))
	}
	var long es.AggregateID
	best := -1
	for _, ref := range p.order {
		if ref.i == 0 && p.model[ref.agg].tail() > best {
			long, best = ref.agg, p.model[ref.agg].tail()
		}
	}
	m := p.model[long]
	return long, m, m.streams[min(k, m.tail()-1)], fmt.Sprintf("the %s oldest stream of the longest aggregate (%d streams)", ordinal(min(k, m.tail()-1)+1), m.tail())
}

func ordinal(n int) string {
	switch {
	case n%100/10 != 1 && n%10 == 1:
		return strconv.Itoa(n) + "st"
	case n%100/10 != 1 && n%10 == 2:
		return strconv.Itoa(n) + "nd"
	case n%100/10 != 1 && n%10 == 3:
		return strconv.Itoa(n) + "rd"
	}
	return strconv.Itoa(n) + "th"
}

// twin picks one of a request id's twins (gen.Twins) by pick.
func twin(req string, pick int) string {
	t := gen.Twins(req)
	return t[(pick>>8)%len(t)][0]
}

// burst appends genBurstSize streams at the next versions of agg with fresh
// request ids, alternating the handles from the step's, as one timeline
// entry.
func (p *player) burst(st gen.Step[genOp], agg es.AggregateID, m *genModel) string {
	op := st.Op
	from := m.tail() + 1
	size := genBurstSize
	if n, ok := p.burstCap[st.Index]; ok {
		size = n
	}
	until := p.burstUntil
	call := p.rec.Invoke(fmt.Sprintf("h%d", st.Instance+1), "append", fmt.Sprintf("burst: %s from v%d, up to %d fresh request ids, handles alternating", aggLabel(agg), from, size))
	events := []es.Event{{Name: op.Events[0].Name, Body: op.Events[0].Body.B}}
	stored := 0
	defer func() {
		if p.burstReached == nil {
			p.burstReached = map[int]int{}
		}
		p.burstReached[st.Index] = stored
		p.tally["burst appends (stored)"] += stored
	}()
	for j := range size {
		if j > 0 && !until.IsZero() && time.Now().After(until) {
			// The store's pace: the burst ends with what it stored, and
			// the rule states the reach.
			call.OK(fmt.Sprintf("%d stored (the burst's time was up)", stored))
			return ""
		}
		inst := (st.Instance + j) % len(p.handles)
		s := es.Stream{Aggregate: agg, Version: m.tail() + 1, RequestID: op.Req.S + "-b" + strconv.Itoa(j) + "-" + strconv.Itoa(op.Pick), CommandID: "cmd-" + nonce(), Events: events}
		err := p.handles[inst].Append(p.ctx, s)
		ok, allowed := m.expect(s)
		switch {
		case err != nil && !isConflict(err):
			call.Info(err.Error())
			if p.ctx.Err() != nil {
				p.setup = fmt.Errorf("the rule's deadline came inside a burst, after %d of its appends were stored (%v)", stored, err)
				return ""
			}
			p.setup = fmt.Errorf("burst append %d of %s through handle %d failed with %v (not a typed conflict)", j+1, describe(s), inst+1, err)
			return ""
		case err == nil && ok:
			p.stored(agg, m, s)
			stored++
		case err == nil:
			call.OK(fmt.Sprintf("append %d stored against the model", j+1))
			return fmt.Sprintf("burst append %d of %s through handle %d must return %s, got no error (tail %d)", j+1, describe(s), inst+1, esKinds(allowed), m.tail())
		case ok:
			call.Complete(classify(err))
			return fmt.Sprintf("burst append %d of %s through handle %d must be stored (tail %d, request id unused), got %s", j+1, describe(s), inst+1, m.tail(), said(err, 80))
		}
	}
	call.OK(fmt.Sprintf("%d stored", stored))
	return ""
}

func newPlayer(ctx context.Context, t target, words [4]string, instances int) (*player, error) {
	p := &player{t: t, ctx: ctx, words: words, rec: history.New(), model: map[es.AggregateID]*genModel{},
		pairs: map[int][2]es.AggregateID{}, nonce: nonce(), tally: gen.Tally{}, checked: gen.Tally{}}
	for range instances {
		h, err := t.Open(ctx)
		if err != nil {
			p.close()
			return nil, err
		}
		p.handles = append(p.handles, h)
	}
	return p, nil
}

func (p *player) close() {
	for _, h := range p.handles {
		_ = h.Close()
	}
}

func (p *player) agg(op genOp) (es.AggregateID, *genModel) {
	pr, ok := p.pairs[op.Pair]
	if !ok {
		pr = pairOf(op.Pair, p.words, p.nonce)
		p.pairs[op.Pair] = pr
	}
	a := pr[op.Side]
	m := p.model[a]
	if m == nil {
		m = &genModel{}
		p.model[a] = m
	}
	return a, m
}

// play runs steps; the violation is "" when every answer was allowed.
func (p *player) play(steps []gen.Step[genOp]) (violation string, at int) {
	var v string
	n, err := gen.Play(p.ctx, steps, func(ctx context.Context, st gen.Step[genOp]) error {
		if st.Delay > 0 {
			p.rec.Note("schedule", "wait", st.Delay.Round(time.Millisecond).String(), "")
		}
		v = p.step(st)
		if p.played++; p.progress != nil {
			p.progress(p.played)
		}
		if v != "" || p.setup != nil {
			return errors.New(v)
		}
		return nil
	})
	if err != nil && v == "" && p.setup == nil {
		p.setup = err // the rule's deadline
	}
	if v == "" && p.setup == nil {
		v = p.audit()
	}
	return v, n
}

// audit loads every aggregate the steps wrote, whole, through each handle
// in turn, and compares it with the model: what no step happened to read
// back (a truncated large body, a stream lost to a collision) shows here.
func (p *player) audit() string {
	i := 0
	for agg, m := range p.model {
		h := p.handles[i%len(p.handles)]
		i++
		if m.tail() == 0 {
			continue
		}
		call := p.rec.Invoke(fmt.Sprintf("h%d", i%len(p.handles)+1), "load", "audit: "+aggLabel(agg))
		got, err := h.Load(p.ctx, agg, es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			call.Info(err.Error())
			p.setup = fmt.Errorf("the final load of %s failed: %w", agg, err)
			return ""
		}
		call.OK(fmt.Sprintf("%d streams", len(got)))
		if j, what := diffStreams(got, m.streams); what != "" {
			return fmt.Sprintf("the final load of %s: stream %d: %s", agg, j+1, what)
		}
	}
	return ""
}

// step runs one step and checks its answer.
func (p *player) step(st gen.Step[genOp]) string {
	op := st.Op
	h := p.handles[st.Instance]
	actor := fmt.Sprintf("h%d", st.Instance+1)
	agg, m := p.agg(op)
	p.tally.Add(op.Kind.String())
	switch op.Kind {
	case opReopen:
		_ = h.Close()
		nh, err := p.t.Open(p.ctx)
		p.rec.Note(actor, "reopen", "", fmt.Sprint(err))
		if err != nil {
			p.setup = fmt.Errorf("reopening handle %d: %w", st.Instance+1, err)
			return ""
		}
		p.handles[st.Instance] = nh
		return ""
	case opLoad:
		from := 1 + op.Pick%(m.tail()+1)
		to := from + (op.Pick>>4)%(m.tail()+2)
		if op.Pick%3 == 0 {
			from, to = es.InitialVersion, eskit.MaxVersion
		}
		call := p.rec.Invoke(actor, "load", fmt.Sprintf("%s [%d,%d]", aggLabel(agg), from, to))
		got, err := h.Load(p.ctx, agg, from, to)
		if err != nil {
			call.Info(err.Error())
			p.setup = fmt.Errorf("load of %s [%d,%d] failed: %w", agg, from, to, err)
			return ""
		}
		call.OK(fmt.Sprintf("%d streams", len(got)))
		var want []es.Stream
		for _, s := range m.streams {
			if s.Version >= from && s.Version <= to {
				want = append(want, s)
			}
		}
		if i, what := diffStreams(got, want); what != "" {
			return fmt.Sprintf("load of %s [%d,%d] through handle %d: stream %d: %s", agg, from, to, st.Instance+1, i+1, what)
		}
		return ""
	case opBurst:
		return p.burst(st, agg, m)
	case opReachBack:
		if len(p.order) == 0 {
			break // nothing stored yet: an append of a fresh request id
		}
		var old es.Stream
		var what string
		agg, m, old, what = p.reachBack(op.Pick)
		if (op.Pick>>6)%2 == 0 {
			p.tally.Add("reach back: exists?")
			return p.exists(h, actor, st.Instance, agg, m, old.RequestID, "reach back: "+what)
		}
		p.tally.Add("reach back: retry")
		s := es.Stream{Aggregate: agg, Version: m.tail() + 1, RequestID: old.RequestID, CommandID: "cmd-" + nonce(), Events: old.Events}
		return p.appendStep(h, actor, st.Instance, "reach back ("+what+")", m, s)
	case opExists:
		req, what := p.existsProbe(op, agg, m)
		return p.exists(h, actor, st.Instance, agg, m, req, what)
	}
	s := p.resolve(op, agg, m)
	for _, e := range op.Events {
		p.tally.Add("body " + e.Body.Class)
	}
	p.tally.Add("request id " + op.Req.Class)
	return p.appendStep(h, actor, st.Instance, op.Kind.String(), m, s)
}

// exists asks h whether agg holds req and checks the answer.
func (p *player) exists(h es.EventStore, actor string, inst int, agg es.AggregateID, m *genModel, req, what string) string {
	call := p.rec.Invoke(actor, "exists?", aggLabel(agg)+" req="+short(req)+" ("+what+")")
	got, err := h.RequestIDExists(p.ctx, agg, req)
	if err != nil {
		call.Info(err.Error())
		p.setup = fmt.Errorf("RequestIDExists(%s, %s) failed: %w", agg, short(req), err)
		return ""
	}
	call.OK(strconv.FormatBool(got))
	if want := m.has(req); got != want {
		return fmt.Sprintf("RequestIDExists(%s, %s) through handle %d is %v, want %v (%s)", agg, short(req), inst+1, got, want, what)
	}
	return ""
}

// appendStep appends s through h and checks the outcome against m.
func (p *player) appendStep(h es.EventStore, actor string, inst int, label string, m *genModel, s es.Stream) string {
	agg := s.Aggregate
	call := p.rec.Invoke(actor, "append", label+": "+aggLabel(agg)+fmt.Sprintf(" v%d req=%s events=%d", s.Version, short(s.RequestID), len(s.Events)))
	err := h.Append(p.ctx, s)
	call.Complete(classify(err))
	ok, allowed := m.expect(s)
	if err != nil && !isConflict(err) {
		if errors.Is(err, es.ErrInvalidArgument) {
			return fmt.Sprintf("%s of %s through handle %d was refused as an invalid argument: %v (every part is valid UTF-8 without NUL)", label, describe(s), inst+1, err)
		}
		// Not a conflict: it may or may not have taken effect, and says
		// nothing the model can judge.
		p.setup = fmt.Errorf("%s of %s through handle %d failed with %v (not a typed conflict)", label, describe(s), inst+1, err)
		return ""
	}
	switch {
	case err == nil && ok:
		p.stored(agg, m, s)
		return ""
	case err == nil:
		return fmt.Sprintf("%s of %s through handle %d must return %s, got no error (tail %d)", label, describe(s), inst+1, esKinds(allowed), m.tail())
	case ok && isConflict(err):
		return fmt.Sprintf("%s of %s through handle %d must be stored (tail %d, request id unused), got %s", label, describe(s), inst+1, m.tail(), said(err, 80))
	}
	kind := conflictName(err)
	if !slices.Contains(allowed, kind) {
		return fmt.Sprintf("%s of %s through handle %d must return %s, got %s (tail %d)", label, describe(s), inst+1, esKinds(allowed), esName(err), m.tail())
	}
	if what := conflictFields(err, s); what != "" {
		return fmt.Sprintf("%s of %s through handle %d raised %s, but %s", label, describe(s), inst+1, esName(err), what)
	}
	p.checked.Add(kind)
	m.refused = s.RequestID
	return ""
}

// resolve makes an append's stream from the abstract step and the model.
func (p *player) resolve(op genOp, agg es.AggregateID, m *genModel) es.Stream {
	s := es.Stream{Aggregate: agg, Version: m.tail() + 1, RequestID: op.Req.S + "-" + strconv.Itoa(op.Pick), CommandID: "cmd-" + nonce()}
	for _, e := range op.Events {
		s.Events = append(s.Events, es.Event{Name: e.Name, Body: e.Body.B})
	}
	switch op.Kind {
	case opStale:
		if m.tail() > 0 {
			s.Version = 1 + op.Pick%m.tail()
		}
	case opCreate:
		s.Version = es.InitialVersion
	case opRetry:
		if m.tail() > 0 {
			old := m.streams[op.Pick%m.tail()]
			s.RequestID = old.RequestID
			if op.Pick%2 == 0 {
				// An exact retry: the stored stream again, a new command id.
				s.Version, s.Events = old.Version, old.Events
			}
		}
	case opAfterRefusal:
		if m.refused != "" && !m.has(m.refused) {
			s.RequestID = m.refused
		}
	case opTwinRequest:
		if m.tail() > 0 {
			if t := twin(m.streams[op.Pick%m.tail()].RequestID, op.Pick); !m.has(t) {
				s.RequestID = t
			}
		}
	case opPartner:
		other := p.pairs[op.Pair][1-op.Side]
		if om := p.model[other]; om != nil && om.tail() > 0 {
			s.RequestID = om.streams[op.Pick%om.tail()].RequestID
		}
	}
	return s
}

// existsProbe picks the request id an exists? step asks about.
func (p *player) existsProbe(op genOp, agg es.AggregateID, m *genModel) (string, string) {
	switch {
	case op.Pick%4 == 0 && m.refused != "":
		return m.refused, "the last refused request id"
	case op.Pick%4 == 1 && m.tail() > 0:
		return twin(m.streams[op.Pick%m.tail()].RequestID, op.Pick), "a twin of a stored request id"
	case op.Pick%4 == 2:
		other := p.pairs[op.Pair][1-op.Side]
		if om := p.model[other]; om != nil && om.tail() > 0 {
			return om.streams[op.Pick%om.tail()].RequestID, "a request id of the twin aggregate"
		}
	}
	if m.tail() > 0 {
		return m.streams[op.Pick%m.tail()].RequestID, "a stored request id"
	}
	return op.Req.S, "a request id never used"
}

func registerGenerated(s *spec.Set, t target) {
	defer registerTorn(s, t)
	// Its bursts' reach is what the store takes in a time budget, like a
	// race's contended trials: it holds a share of the processors
	// (ItRace), so that beside it fewer races share the store's one lock.
	// Measured with eventstore/memory-paced under tck run at a load of
	// 18-20: 471 burst appends with every race beside it.
	s.ItRace("ES-4.1", func(r *spec.R) {
		seed := gen.Seed(t.Seed)
		r.Ev.Figure("seed", seed, "")
		instances := genInstances
		if t.OneHandle != "" {
			instances = 1
			r.Ev.Notef("one handle only (%s): the schedule does not reach checks or tails cached per handle", t.OneHandle)
		}
		horizon := gen.Horizon(genHorizon, t.MaxWait)
		if dl, ok := r.Context().Deadline(); ok {
			// The schedule, and shrinking a failure, within the rule's deadline.
			horizon = min(horizon, time.Until(dl)/3)
		}
		sched := newGenSchedule(seed, horizon, instances)
		src := gen.NewSource(seed)
		var words [4]string
		for i := range words {
			words[i] = gen.Draw(src, gen.ID(gen.IDOptions{})).S
		}
		p, err := newPlayer(r.Context(), t, words, instances)
		r.Expect(err).NotTo(gomega.HaveOccurred(), "opening %d handles on the store", instances)
		start := time.Now()
		if dl, ok := r.Context().Deadline(); ok {
			// The bursts are the rule's volume: they get a share of the
			// deadline and end with what the store took in it, so that the
			// rest of the schedule, the audit and a shrink still fit.
			p.burstUntil = start.Add(time.Until(dl) * genBurstShare / 100)
		}
		p.progress = func(done int) { r.Progress(done, len(sched.Steps), "steps") }
		violation, at := p.play(sched.Steps)
		p.close()
		elapsed := time.Since(start)
		bursts, longest := p.burstAppends()
		r.Ev.Figure("burst appends stored (aimed at)", fmt.Sprintf("%d (%d)", bursts, genBursts*genBurstSize), "")
		r.Ev.Figure("longest burst", longest, "appends")
		reach := fmt.Sprintf("a request-id memory of fewer than about %d ids store-wide or %d per aggregate, or a load page under %d events, would have been caught",
			max(0, bursts-20), max(0, longest-20), longest)
		r.Ev.Figure("operations run", at, "")
		r.Ev.Figure("instances (handles on one store)", instances, "")
		r.Ev.Figure("time horizon (waits spread over the schedule)", gen.Waited(sched.Steps[:min(at+1, len(sched.Steps))]).Milliseconds(), "ms")
		r.Ev.Figure("operation frequencies (per cent of steps)", weights(), "")
		r.Ev.Figure("covered", p.tally.String(), "")
		r.Ev.Figure("identity pairs (each two aggregates)", strings.Join(pairKinds, "; "), "")
		r.Ev.Figure("conflicts checked in full (aggregate, version, request id)", p.checked.String(), "")
		r.Ev.Figure("time spent", elapsed.Milliseconds(), "ms")
		if violation == "" {
			r.Ev.Record(p.rec.Ops())
			if p.setup != nil {
				r.Unknown("the schedule stopped at step %d of %d (%s): %v", at+1, len(sched.Steps), replay(seed), p.setup)
			}
			if bursts < genBurstFloor {
				r.Unknown("the bursts stored %d appends in the %d%% of the deadline they get, fewer than the floor of %d: no deeper than ES-1.5's 100-stream history (raise Target.Timeout for a slow store)", bursts, genBurstShare, genBurstFloor)
			}
			if bursts < genBursts*genBurstSize {
				r.Ev.Notef("the store's pace let the bursts store %d of the %d appends aimed at (the longest %d)", bursts, genBursts*genBurstSize, longest)
			}
			r.Ev.Notef("%d steps over %d handles and %s (seed %d) equal the model; every refusal's typed conflict carried the aggregate, version and request id asked; the bursts stored %d appends: %s",
				at, instances, gen.Waited(sched.Steps).Round(time.Millisecond), seed, bursts, reach)
			return
		}
		// Shrink: the failing step and what came before it, replayed in
		// parts on fresh aggregates until no part can be left out.
		failing := sched.Steps[:min(at+1, len(sched.Steps))] // at == len: the final audit failed
		var last *player
		budget := 10 * time.Second
		if dl, ok := r.Context().Deadline(); ok {
			budget = min(budget, time.Until(dl)/2)
		}
		shrinkEnd := time.Now().Add(budget)
		fails := func(steps []gen.Step[genOp]) bool {
			q, err := newPlayer(r.Context(), t, words, instances)
			if err != nil {
				return false
			}
			defer q.close()
			// A replay's bursts no longer than the original's, and within
			// the shrink's time.
			q.burstCap, q.burstUntil = p.burstReached, shrinkEnd
			v, _ := q.play(steps)
			if v != "" {
				last, violation = q, v
			}
			return v != ""
		}
		// First the steps on the failing aggregate's pair, the waits and
		// the reopens (one replay, often most of the way), then ddmin.
		bad := failing[len(failing)-1].Op
		var near []gen.Step[genOp]
		for _, st := range failing {
			if st.Op.Pair == bad.Pair || st.Delay > 0 || st.Op.Kind == opReopen {
				near = append(near, st)
			}
		}
		replays := 0
		if len(near) < len(failing) {
			replays++
			if fails(near) {
				failing = near
			}
		}
		smallest, n := gen.Shrink(failing, fails, budget, 400)
		replays += n
		if last == nil {
			last = p
		}
		r.Ev.Figure("shrunk history (steps)", len(smallest), "")
		r.Ev.Figure("replays while shrinking", replays, "")
		r.Ev.Smallest(last.rec.Ops())
		r.Ev.Record(p.rec.Ops())
		where := fmt.Sprintf("step %d of %d", at+1, len(sched.Steps))
		if at == len(sched.Steps) {
			where = "the final load of every aggregate"
		}
		r.Ev.Notef("failed at %s, shrunk to %d steps; %s", where, len(smallest), replay(seed))
		r.Expect(violation == "").To(gomega.BeTrue(), "%s (%s)", violation, replay(seed))
	})
}

// aggLabel is an aggregate's whole identity for a timeline: the pairs
// differ in any of its parts.
// replay says how to play a generated rule's seed again, to whoever runs
// it: the CLI (tck run --seed) or an author's Check or Register
// (Target.Seed).
func replay(seed int64) string {
	if spec.CLIDriven() {
		return fmt.Sprintf("seed %d: tck run --seed %d replays it", seed, seed)
	}
	return fmt.Sprintf("seed %d: Target.Seed = %d replays it", seed, seed)
}

func aggLabel(a es.AggregateID) string {
	return short(a.Context) + "/" + short(a.Name) + "/" + short(a.ID) + "@" + short(a.Tenant)
}

func weights() string {
	var parts []string
	for k, w := range opWeights {
		if w > 0 {
			parts = append(parts, fmt.Sprintf("%s %d%%", opKind(k), w))
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; event bodies of 1 MiB and more: %.0f%% (and in the first %d appends or creates); %d bursts of %d appends in the first third (%d request ids), %d reach-backs forced after them",
		100*pLargeBody, genForcedLarge, genBursts, genBurstSize, genBursts*genBurstSize, genForcedReachBacks)
}
