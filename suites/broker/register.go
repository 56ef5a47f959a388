package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/mq"
)

// target is what the rules run against: the author's Target and the kit's
// hooks, which reach the rules through the options (spec.With; zero
// under an author's Check or Register).
type target struct {
	Target
	kithooks.Broker
	// dedupeNote says where Windows.DedupeWindow came from, or why the
	// server's window could not be read (then the declared one is used).
	dedupeNote string
}

// newSet builds the suite's rules against the author's target and the
// kit's hooks among o: the one set both entry points run.
func newSet(author Target, o spec.Option) *spec.Set {
	t := target{Target: author, Broker: spec.HooksOf[kithooks.Broker](o)}
	if t.Declared != nil {
		t = applyDeclared(t)
	}
	t.Windows = t.Windows.WithDefaults()
	if t.Budget <= 0 {
		t.Budget = 60 * time.Second
	}
	if t.Seed == 0 {
		// Below 2^53, so the seed survives a round trip through a JSON
		// number in results.json and can be given back.
		t.Seed = int64(rand.Uint64N(1<<53-1)) + 1
	}
	s := spec.New("broker", capsOf(t)...)
	s.NotApplicable = t.NotApplicable
	s.Reasons = map[string]string{}
	s.Lacks = map[catalog.Capability]string{}
	for c, why := range t.Lacks {
		s.Lacks[catalog.Capability(c)] = why
	}
	if _, ok := s.Lacks[catalog.CapBrokerAtomicBatch]; !ok {
		s.Lacks[catalog.CapBrokerAtomicBatch] = batchLacks
	}
	// Under go test the rules run as parallel subtests, each starting its
	// own workload, so their waits overlap (Ginkgo runs specs in order and
	// overlaps them through Prepare instead).
	s.Parallel = true
	s.Timeout = t.Timeout
	if s.Timeout <= 0 {
		s.Timeout = t.Budget + workloadMargin + 15*time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &plan{t: t, set: s, ctx: ctx, cancel: cancel}
	s.Probe = p.probe
	s.Prepare = p.reportProgress
	s.Finish = p.finish
	registerDedupe(p)
	registerDelivery(p)
	registerQueue(p)
	registerDurability(p)
	registerRedis(p)
	registerProfile(p)
	registerKafka(p)
	registerRabbit(p)
	registerShare(p)
	registerBatch(p)
	return s
}

// capsOf maps what the target declares to catalog capabilities.
func capsOf(t target) []catalog.Capability {
	c := t.Caps
	var out []catalog.Capability
	add := func(ok bool, cp catalog.Capability) {
		if ok {
			out = append(out, cp)
		}
	}
	add(c.DedupeWindow > 0, catalog.CapBrokerDedupe)
	add(c.AckWait, catalog.CapBrokerAckWait)
	add(c.NakDelay, catalog.CapBrokerNakDelay)
	add(c.Term, catalog.CapBrokerTerm)
	add(c.MaxDeliver, catalog.CapBrokerMaxDeliver)
	add(c.InProgress, catalog.CapBrokerInProgress)
	add(t.Private != nil, catalog.CapBrokerRestart)
	add(t.Fault != nil, catalog.CapBrokerFaultProxy)
	add(t.Inspect != nil, catalog.CapBrokerInspect)
	out = append(out, kafkaCaps(t)...)
	out = append(out, rabbitCaps(t)...)
	add(c.AtomicBatch, catalog.CapBrokerAtomicBatch)
	return out
}

// A waiting rule is split in two (spec.Workload). Its workload runs in the
// background, measures, and returns its judge; it must not touch the rule's
// R. The judge runs in the spec: it turns what was measured into
// expectations on r, and may still wait on what the workload left running
// (a watch for a redelivery) through r.Eventually and r.Consistently.
type (
	workload func(f *fixture) judge
	judge    func(r *spec.R)
)

// plan is the suite's context over one set of rules: every workload's
// context derives from it, and the set's finish cancels it.
type plan struct {
	t      target
	set    *spec.Set
	ctx    context.Context
	cancel context.CancelFunc

	// liveOnce guards readLive, which may set t.Windows.DedupeWindow.
	liveOnce sync.Once
	// progressDone is closed when the progress reporter ended (nil: none
	// started).
	progressDone chan struct{}
}

// workload is rule id's spec.Workload: wait is its waiting by definition
// (the denominator of the overhead ratio), work what runs in the
// background on a fixture of its own.
func (p *plan) workload(id string, wait func(w kithooks.Windows, c mq.Capabilities) time.Duration, work workload) spec.Workload {
	waits := func() time.Duration {
		p.readLive()
		return wait(p.t.Windows, p.t.Caps)
	}
	return spec.Workload{
		Wait: waits,
		// Only rules that apply get here: the set decides (spec.Set.NotApplicable).
		Ready: func() bool { return waits() <= p.t.Budget },
		Gate: func(r *spec.R) {
			w := waits()
			r.Ev.Figure("wait by definition", w.Seconds(), "s")
			if w > p.t.Budget && p.t.Declared != nil {
				r.Unknown("%s must wait %s by definition at the declared settings (%s), longer than the run's limit %s (tck run --max-wait): the kit neither shortens a declared window nor guesses its outcome; raise --max-wait to measure it", id, w, p.t.declaredWaits(), p.t.Budget)
			}
			if w > p.t.Budget {
				r.Skipped("the rule must wait %s by definition, longer than the run's time budget %s; it is not shortened", w, p.t.Budget)
			}
		},
		Start: func() spec.Job { return p.start(id, work) },
	}
}

// readLive reads, once and before any workload starts, the de-dupe window
// the first declared stream really has on the team's server: the rules'
// scratch topics get it (Windows.DedupeWindow) and are judged against the
// declaration, so a window changed on the server fails the BR-1 rules as
// measured, not only BR-6.1 as read. Without a declaration on the server
// nothing is read; a read that fails leaves the declared window, noted.
func (p *plan) readLive() {
	p.liveOnce.Do(func() {
		d := p.t.Declared
		if d == nil || !d.OnServer || len(d.Streams) == 0 || p.t.Inspect == nil || p.t.Caps.DedupeWindow <= 0 {
			return
		}
		name := d.Streams[0].Topic.Name
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		defer cancel()
		in, err := p.t.Inspect(ctx)
		if err != nil {
			p.t.dedupeNote = fmt.Sprintf("the server's window of stream %s could not be read (%v): the scratch topic has the declared window", name, err)
			return
		}
		defer in.Close()
		ti, err := in.Topic(ctx, name)
		if err != nil {
			p.t.dedupeNote = fmt.Sprintf("the server's window of stream %s could not be read (%v): the scratch topic has the declared window", name, err)
			return
		}
		if w := ti.Config.DedupeWindow; w > 0 && w != p.t.Caps.DedupeWindow {
			p.t.Windows.DedupeWindow = w
			p.t.dedupeNote = fmt.Sprintf("the team's stream %s has a de-dupe window of %s on the server, not the declared %s: the scratch topic was created with the server's window and judged against the declaration", name, w, p.t.Caps.DedupeWindow)
		}
	})
}

// finish stops the suite's context, so every workload ends, and waits for
// the progress reporter; the set then stops what is left.
func (p *plan) finish() {
	p.cancel()
	if p.progressDone != nil {
		<-p.progressDone
	}
}

// workloadMargin is what a workload gets past the budget: the budget says
// which rules' waits by definition fit in the run, and a rule that fits
// still needs its set-up, its read-backs and its tolerance around the
// wait. A workload cut at exactly the budget would judge a redelivery due
// just after it as missing.
const workloadMargin = 10 * time.Second

// start runs id's workload on a fixture of its own, in its own goroutine,
// bounded by the budget, the margin and the kit's own set-up it needs.
func (p *plan) start(id string, work workload) spec.Job {
	// Counted on the kit's scheduled time: a pause of the kit's own
	// process is not time the broker had.
	ctx, cancel := stall.WithTimeout(p.ctx, p.t.Budget+workloadMargin+p.set.SetUp[id])
	f := newFixture(ctx, cancel, p.t, id)
	judged := make(chan spec.Body, 1)
	f.spawn(func() {
		j := runSafely(f, work)
		judged <- func(r *spec.R) {
			f.merge(r.Ev)
			j(r)
			f.repanic()
		}
	})
	return spec.Job{Judged: judged, End: f.end, Stop: f.stop}
}

// ageTooShort: a max age under what a rule may hold a message (its judge
// reads back after the run's waits, up to the run's limit) would expire the
// rules' messages before they are judged; the timed rules' scratch topics
// then keep messages without an age limit (BR-6.1's copy keeps the age).
func ageTooShort(w kithooks.Windows, budget time.Duration) bool {
	return w.MaxAge > 0 && w.MaxAge < budget+time.Minute
}

// firstRedelivery is when an unacked first delivery comes back: the first
// back-off step, else the ack wait.
func firstRedelivery(w kithooks.Windows) time.Duration {
	if len(w.Backoff) > 0 {
		return w.Backoff[0]
	}
	return w.AckWait
}

// runSafely runs a workload; a panic in it (the target's code panicked)
// becomes a judge that panics the same way in the spec, so the verdict is
// the one a panicking body gets.
func runSafely(f *fixture, work workload) (j judge) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			j = func(r *spec.R) {
				r.Ev.Notef("panic in the workload: %v\n%s", p, stack)
				panic(p)
			}
		}
	}()
	if err := f.open(); err != nil {
		return f.failed(err, "opening the broker")
	}
	return f.stallAware(work(f))
}
