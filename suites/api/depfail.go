package api

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/apiservice/storefault"
	"github.com/onceproof/tck/internal/spec"
)

// API-6.1 (issue 37): a failure inside the service's own calls. Where the
// kit runs the service over a store it controls (its in-process service,
// internal/apiservice), it makes the service's store calls fail and
// judges every answer against what the store really holds: a failed
// look-up is not "no such key", a failed write is not a creation, a failed
// read is not "missing".

const (
	depDrawnIDs = 6 // ids at the rates drawn from the seed, after the forced cases
	depAttempts = 8 // sends of one create until an answer that is not an error
	depMaxRun   = 3 // store calls of one id failed in a row at the rates, at most
)

// depKinds are the ways the kit fails a call, each forced once per case.
var depKinds = []storefault.Kind{storefault.Cancelled, storefault.TimedOut, storefault.Failed}

// depPlan fails the store calls of the rule's ids: the next call of an id
// when forced, any call of an armed id at the rate drawn from the seed.
// Whether call n of (id, operation) fails is a hash of the seed, the id
// without the run's salt, the operation and n, so a seed replays which
// calls fail whatever the run's salt or timing (the rule's requests are
// sent one at a time).
type depPlan struct {
	seed       int64
	salt       string
	rate       float64 // of a store call of an armed id
	cancelled  float64 // share of the failures that are cancellations
	timedOut   float64 // share that are timeouts (a write's after its effect)
	mu         sync.Mutex
	owned      map[string]bool
	armed      map[string]bool
	forced     map[string]storefault.Kind
	calls      map[string]int // id|op -> calls so far
	run        map[string]int // id -> failures in a row
	log        map[string][]string
	effect     map[string]bool // a write of the id failed after its effect
	kinds      map[storefault.Kind]int
	failed     int
	afterWrite int
}

func newDepPlan(seed int64, salt string) *depPlan {
	u := func(what string, lo, hi float64) float64 { return lo + (hi-lo)*depUnit(seed, "rate|"+what) }
	return &depPlan{seed: seed, salt: salt,
		rate: u("store", 0.25, 0.5), cancelled: u("cancelled", 0.2, 0.4), timedOut: u("timed-out", 0.2, 0.4),
		owned: map[string]bool{}, armed: map[string]bool{}, forced: map[string]storefault.Kind{}, calls: map[string]int{},
		run: map[string]int{}, log: map[string][]string{}, effect: map[string]bool{}, kinds: map[storefault.Kind]int{}}
}

// depUnit is a number in [0, 1) from seed and salt: the same on every run.
func depUnit(seed int64, salt string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(salt))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64())).Float64()
}

// own makes id the plan's: its calls may fail.
func (p *depPlan) own(id string, armed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owned[id], p.armed[id] = true, armed
}

// force makes the next store call of id fail with kind.
func (p *depPlan) force(id string, kind storefault.Kind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forced[id] = kind
}

// Take implements storefault.Plan.
func (p *depPlan) Take(c storefault.Call) (kind storefault.Kind, after, fail bool) {
	id := c.Agg.ID
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.owned[id] {
		return "", false, false
	}
	k := id + "|" + c.Op
	p.calls[k]++
	n := p.calls[k]
	kind, fail = p.forced[id]
	if fail {
		delete(p.forced, id)
	} else if p.armed[id] && p.run[id] < depMaxRun {
		salt := fmt.Sprintf("%s|%s|%d", strings.ReplaceAll(id, p.salt, ""), c.Op, n)
		if fail = depUnit(p.seed, salt) < p.rate; fail {
			switch x := depUnit(p.seed, salt+"|kind"); {
			case x < p.cancelled:
				kind = storefault.Cancelled
			case x < p.cancelled+p.timedOut:
				kind = storefault.TimedOut
			default:
				kind = storefault.Failed
			}
		}
	}
	if !fail {
		p.run[id] = 0
		return "", false, false
	}
	p.run[id]++
	p.failed++
	p.kinds[kind]++
	// A write that times out may have taken effect: the kit lets it, and
	// loses its answer. A read that times out did nothing.
	after = kind == storefault.TimedOut && c.Op == storefault.OpAppend
	p.log[id] = append(p.log[id], fmt.Sprintf("%s #%d %s", c.Op, n, kind))
	return kind, after, true
}

// Effect implements storefault.Plan: a write the plan failed after its
// effect took effect.
func (p *depPlan) Effect(c storefault.Call) {
	id := c.Agg.ID
	p.mu.Lock()
	defer p.mu.Unlock()
	p.effect[id] = true
	p.afterWrite++
	if l := p.log[id]; len(l) > 0 {
		l[len(l)-1] += " after its effect"
	}
}

// tookEffect says whether a write of id took effect though it failed.
func (p *depPlan) tookEffect(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.effect[id]
}

// since is how many calls of id the plan failed so far.
func (p *depPlan) since(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log[id])
}

// why names the calls of id the kit failed from the from-th on: the first
// and a count of the rest, for a failure's first line.
func (p *depPlan) why(id string, from int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.log[id]
	if from >= len(l) {
		if len(l) == 0 {
			return "no store call of it failed"
		}
		return "after the kit failed " + l[len(l)-1]
	}
	s := "the kit failed " + l[from]
	if more := len(l) - from - 1; more > 0 {
		s += fmt.Sprintf(" (+%d)", more)
	}
	return s
}

// depID is one id of the rule and what the kit knows of it.
type depID struct {
	in    intent
	first answer // the first creation seen (Status 0: none)
	made  bool   // a creation was answered, or a write of it took effect
}

// depRun is one run of API-6.1.
type depRun struct {
	*run
	p    *depPlan
	reps []*client
	sent int // requests so far: each goes to the next replica
}

// failf fails the rule with the message as its reason.
func (u *depRun) failf(format string, args ...any) {
	u.r.Expect(false).To(gomega.BeTrue(), append([]any{format}, args...)...)
}

func (u *depRun) next() *client {
	c := u.reps[u.sent%len(u.reps)]
	u.sent++
	return c
}

// name is how a failure's first line names id k.
func (u *depRun) name(k *depID) string { return abbrevID(k.in.id, 24) }

// create sends k's create and judges the answer; it says whether the
// answer was an error (a 5xx: what a service whose store failed must
// answer when it cannot know).
func (u *depRun) create(ctx context.Context, k *depID, what string) (failed bool) {
	c, from := u.next(), u.p.since(k.in.id)
	a := u.answered(c.create(ctx, c.actor, k.in.id, k.in.scope, k.in.body), what+" of "+k.in.id)
	why := u.p.why(k.in.id, from)
	d := u.d
	made := k.made || u.p.tookEffect(k.in.id)
	switch {
	case a.Status >= 500:
		return true
	case d.IsCreated(a.Status) && k.first.Status != 0:
		// A repeat of a creation the kit saw: replay's first response,
		// never a second creation.
		if wrong := repeatWrong(d, a, k.first); wrong != "" || d.Contract == apidesc.Reject409 {
			u.failf("%s: %s%s, %s: a second creation (%d), want %s or an error%s", u.name(k), what, c.where(), why, a.Status, declaredRepeat(d), u.seedTag())
		}
	case d.IsCreated(a.Status) && made && d.Contract == apidesc.Reject409:
		u.failf("%s: %s%s, %s: a second creation (%d; a write took effect), want %s or an error%s", u.name(k), what, c.where(), why, a.Status, declaredRepeat(d), u.seedTag())
	case d.IsCreated(a.Status):
		// The first creation the kit sees (under replay possibly the
		// replay of a write whose answer the kit lost).
		k.first, k.made = a, true
	case d.Contract == apidesc.Reject409 && slices.Contains(d.Answers.Repeat, a.Status):
		if !made {
			u.failf("%s: %s%s, %s: a repeat answer (%d) though nothing was stored, want an error%s", u.name(k), what, c.where(), why, a.Status, u.seedTag())
		}
		k.made = true
	default:
		u.failf("%s: %s%s, %s: %s, want an error, a creation or %s%s", u.name(k), what, c.where(), why, brief(a), declaredRepeat(d), u.seedTag())
	}
	return false
}

// settle sends k's create until an answer that is not an error, at most
// depAttempts times.
func (u *depRun) settle(ctx context.Context, k *depID, what string) {
	for i := 0; i < depAttempts && u.create(ctx, k, what); i++ {
		what = "a retry"
	}
}

// read reads k back and judges the answer: a created id is shown or an
// error, never missing.
func (u *depRun) read(ctx context.Context, k *depID, what string) {
	c, from := u.next(), u.p.since(k.in.id)
	a := u.answered(c.read(ctx, k.in.id, k.in.scope), what+" of "+k.in.id)
	why := u.p.why(k.in.id, from)
	made := k.made || u.p.tookEffect(k.in.id)
	switch {
	case a.Status >= 500:
	case slices.Contains(u.d.Read.Found, a.Status):
		if diff := shows(a.Body, k.in.body); diff != "" {
			u.failf("%s: %s%s, %s: another payload (%s)%s", u.name(k), what, c.where(), why, clip(diff, 40), u.seedTag())
		}
	case slices.Contains(u.d.Read.Missing, a.Status) && made:
		u.failf("%s: %s%s, %s: missing (%d) though created, want it or an error%s", u.name(k), what, c.where(), why, a.Status, u.seedTag())
	case slices.Contains(u.d.Read.Missing, a.Status):
	default:
		u.failf("%s: %s%s, %s: %s, want found, missing or an error%s", u.name(k), what, c.where(), why, brief(a), u.seedTag())
	}
}

// list counts k's resources (where a list is declared) and judges the
// answer: none of a created id, or two, is wrong.
func (u *depRun) list(ctx context.Context, k *depID, what string) {
	if u.d.List == nil {
		return
	}
	c, from := u.next(), u.p.since(k.in.id)
	n, _, a, err := c.count(ctx, k.in.id, k.in.scope)
	u.answered(a, what+" of "+k.in.id)
	why := u.p.why(k.in.id, from)
	made := k.made || u.p.tookEffect(k.in.id)
	switch {
	case a.Status >= 500:
	case err != nil:
		u.failf("%s: %s%s, %s: %v%s", u.name(k), what, c.where(), why, err, u.seedTag())
	case n > 1:
		u.failf("%s: %s%s, %s: %d resources, want 1%s", u.name(k), what, c.where(), why, n, u.seedTag())
	case n == 0 && made:
		u.failf("%s: %s%s, %s: none though created, want 1 or an error%s", u.name(k), what, c.where(), why, u.seedTag())
	}
}

// after judges k once the failures stopped: a repeat gets the first
// creation's declared answer (a creation if none was made), the read
// shows the payload, one resource carries the id.
func (u *depRun) after(ctx context.Context, k *depID) {
	made := k.made || u.p.tookEffect(k.in.id)
	c := u.next()
	a := u.answered(c.create(ctx, c.actor, k.in.id, k.in.scope, k.in.body), "the repeat after the failures of "+k.in.id)
	why := "after the failures (" + u.p.why(k.in.id, 0) + ")"
	switch {
	case k.first.Status != 0:
		u.compare(a, k.first)
		if wrong := repeatWrong(u.d, a, k.first); wrong != "" {
			u.failf("%s: the repeat%s %s got %s, want %s%s", u.name(k), c.where(), why, wrong, declaredRepeat(u.d), u.seedTag())
		}
	case made && u.d.Contract == apidesc.Reject409:
		if !slices.Contains(u.d.Answers.Repeat, a.Status) {
			u.failf("%s: the repeat%s %s (a write of it took effect) got %s, want %s%s", u.name(k), c.where(), why, brief(a), declaredRepeat(u.d), u.seedTag())
		}
	default:
		// None seen (replay: the stored response, replayed now).
		if !u.d.IsCreated(a.Status) {
			u.failf("%s: the request%s %s got %s, want a creation (%s)%s", u.name(k), c.where(), why, brief(a), statusList(u.d.Create.Created), u.seedTag())
		}
		k.first, k.made = a, true
	}
	rc := u.next()
	ra := u.answered(rc.read(ctx, k.in.id, k.in.scope), "the read after the failures of "+k.in.id)
	if !slices.Contains(u.d.Read.Found, ra.Status) {
		u.failf("%s: the read%s %s got %s, want it found%s", u.name(k), rc.where(), why, brief(ra), u.seedTag())
	} else if diff := shows(ra.Body, k.in.body); diff != "" {
		u.failf("%s: the read%s %s shows another payload (%s)%s", u.name(k), rc.where(), why, clip(diff, 40), u.seedTag())
	}
	lc := u.next()
	n, _, la, err := lc.count(ctx, k.in.id, k.in.scope)
	u.answered(la, "the count after the failures of "+k.in.id)
	if err != nil {
		u.failf("%s: counting the resources%s %s: %v%s", u.name(k), lc.where(), why, err, u.seedTag())
	}
	if n != 1 {
		u.failf("%s: %d resources carry the id%s %s, want 1%s", u.name(k), n, lc.where(), why, u.seedTag())
	}
}

// depControls are the failure switches of the target's instances the kit
// controls (the first, then the replicas).
func depControls(t Target) []*storefault.Control {
	var out []*storefault.Control
	for _, url := range append([]string{t.URL}, t.Replicas...) {
		if c := storefault.For(url); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// ownStore says whether the kit controls the service's store (CapOwnStore).
func ownStore(t Target) bool { return storefault.For(t.URL) != nil }

// noOwnStore is why API-6.1 does not apply to another service.
const noOwnStore = "the kit controls no dependency of this service (a service at a URL, a command or an author's own): only the kit's in-process service runs over a store whose calls the kit can fail"

func registerDepFailures(s *spec.Set, t Target) {
	s.It("API-6.1", func(r *spec.R) {
		base := begin(r, t)
		u := &depRun{run: base, p: newDepPlan(base.seed, base.v.salt), reps: spread(base.c, t)}
		ctx := r.Context()
		var disarms []func()
		for _, c := range depControls(t) {
			disarms = append(disarms, c.Arm(u.p))
		}
		disarm := func() {
			for _, d := range disarms {
				d()
			}
		}
		r.DeferCleanup(disarm)
		r.Ev.Figure("store call failure rate", fmt.Sprintf("%.0f%%", 100*u.p.rate), "of the store calls of an armed id, drawn from the seed; at most 3 in a row per id")
		r.Ev.Figure("failure kinds", fmt.Sprintf("cancelled %.0f%%, timed out %.0f%%, error %.0f%%", 100*u.p.cancelled, 100*u.p.timedOut, 100*(1-u.p.cancelled-u.p.timedOut)), "drawn from the seed; a write that times out took effect first")
		fresh := func(armed bool) *depID {
			k := &depID{in: u.v.intentWith(u.v.id(r.ID, idPlain))}
			u.p.own(k.in.id, armed)
			return k
		}
		var ids []*depID
		// The forced cases: the first store call of a fresh create, of a
		// repeat, of a read and of a list fails, in each way.
		for _, kind := range depKinds {
			k := fresh(false)
			ids = append(ids, k)
			u.p.force(k.in.id, kind)
			u.create(ctx, k, "a create")
			u.read(ctx, k, "the read")
			u.settle(ctx, k, "the retry")

			k = fresh(false)
			ids = append(ids, k)
			u.settle(ctx, k, "the create")
			u.p.force(k.in.id, kind)
			u.create(ctx, k, "a repeat")
			u.p.force(k.in.id, kind)
			u.read(ctx, k, "a read")
			u.p.force(k.in.id, kind)
			u.list(ctx, k, "a list")
		}
		// At the rates drawn from the seed: every call of these ids.
		for range depDrawnIDs {
			k := fresh(true)
			ids = append(ids, k)
			u.settle(ctx, k, "the create")
			u.read(ctx, k, "the read")
			u.create(ctx, k, "a repeat")
			u.list(ctx, k, "the list")
			u.read(ctx, k, "a second read")
		}
		disarm()
		for _, k := range ids {
			u.after(ctx, k)
		}
		if u.p.failed == 0 {
			r.Unknown("the service made no store call of the rule's ids through the kit's switch: nothing was failed")
		}
		r.Ev.Figure("store calls failed", u.p.failed, fmt.Sprintf("cancelled %d, timed out %d, error %d", u.p.kinds[storefault.Cancelled], u.p.kinds[storefault.TimedOut], u.p.kinds[storefault.Failed]))
		r.Ev.Figure("writes failed after their effect", u.p.afterWrite, "the answer lost, the write stored")
		r.Ev.Figure("ids", len(ids), fmt.Sprintf("%d forced cases, %d at the drawn rates", len(ids)-depDrawnIDs, depDrawnIDs))
		r.Ev.Notef("with its store failing, the service answered every request with an error or an answer the store's state allows, and after the failures every id has its one resource and the first creation's answer")
	})
}
