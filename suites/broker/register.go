package broker

import (
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Register registers every BR rule against t. Call it inside a Ginkgo suite
// (before RunSpecs), once per target.
//
// Ginkgo runs specs one after another, but the rules here mostly wait. So
// the first spec to run starts the workload of every selected rule at once,
// each in its own goroutine on its own topics, and each spec then waits for
// its own workload and judges what it measured. A rule that was filtered
// out, or needs a capability the target lacks, starts nothing.
func Register(t Target) {
	t.Windows = t.Windows.withDefaults()
	if t.Budget <= 0 {
		t.Budget = 60 * time.Second
	}
	s := spec.New("broker", capsOf(t)...)
	s.Timeout = t.Timeout
	if s.Timeout <= 0 {
		s.Timeout = t.Budget + 15*time.Second
	}
	p := &plan{t: t, set: s, rules: map[string]ruleDef{}, started: map[string]chan judge{}}
	ginkgo.Describe("broker", func() {
		registerDedupe(p)
		registerDelivery(p)
		registerQueue(p)
		registerDurability(p)
	})
}

// capsOf maps what the target declares to catalog capabilities.
func capsOf(t Target) []catalog.Capability {
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
	return out
}

// judge runs in the spec's goroutine: it turns what a workload measured into
// Gomega expectations and verdict overrides.
type judge func()

// workload measures in the background and returns how to judge it. It must
// not call Gomega or spec.*: it does not run in a spec.
type workload func(f *fixture) judge

type ruleDef struct {
	// wait is how long the rule must wait by definition (a window to pass,
	// an ack wait to end): the denominator of the overhead ratio.
	wait func(w Windows, c mq.Capabilities) time.Duration
	run  workload
}

type plan struct {
	t     Target
	set   *spec.Set
	rules map[string]ruleDef
	order []string

	once    sync.Once
	mu      sync.Mutex
	started map[string]chan judge
	results map[string]*fixture
}

// add registers rule id: wait is its waiting by definition, run its workload.
func (p *plan) add(id string, wait func(w Windows, c mq.Capabilities) time.Duration, run workload) {
	p.rules[id] = ruleDef{wait: wait, run: run}
	p.order = append(p.order, id)
	p.set.It(id, func(ctx context.Context, ev *verdict.Evidence) {
		if why, ok := p.t.NotApplicable[id]; ok {
			spec.NotApplicable("%s", why)
		}
		p.once.Do(p.startSelected)
		w := wait(p.t.Windows, p.t.Caps)
		ev.Figure("wait by definition", w.Seconds(), "s")
		if w > p.t.Budget {
			spec.Skipped("the rule must wait %s by definition, longer than the run's time budget %s; it is not shortened", w, p.t.Budget)
		}
		ch, f := p.start(id)
		// The judge's own notes land in the fixture's evidence too; merge
		// once, however the judge ends (a Gomega failure panics through).
		defer f.merge(ev)
		select {
		case j := <-ch:
			j()
		case <-ctx.Done():
			spec.Unknown("the workload of %s did not finish before the rule's deadline", id)
		}
	})
}

// startSelected starts the workload of every rule Ginkgo will run.
func (p *plan) startSelected() {
	cfg, _ := ginkgo.GinkgoConfiguration()
	have := map[catalog.Capability]bool{}
	for _, c := range capsOf(p.t) {
		have[c] = true
	}
	for _, id := range p.order {
		r := catalog.MustLookup(id)
		// The text Ginkgo matches: the container's, then the spec's.
		if !selected("broker "+id+" "+r.Title, cfg.FocusStrings, cfg.SkipStrings) {
			continue
		}
		_, excluded := p.t.NotApplicable[id]
		ok := !excluded
		for _, n := range r.Needs {
			ok = ok && have[n]
		}
		if ok && p.rules[id].wait(p.t.Windows, p.t.Caps) <= p.t.Budget {
			p.start(id)
		}
	}
}

func selected(text string, focus, skip []string) bool {
	for _, s := range skip {
		if re, err := regexp.Compile(s); err == nil && re.MatchString(text) {
			return false
		}
	}
	if len(focus) == 0 {
		return true
	}
	for _, s := range focus {
		if re, err := regexp.Compile(s); err == nil && re.MatchString(text) {
			return true
		}
	}
	return false
}

// start runs id's workload once, in its own goroutine, bounded by the budget.
func (p *plan) start(id string) (chan judge, *fixture) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.results == nil {
		p.results = map[string]*fixture{}
	}
	if ch, ok := p.started[id]; ok {
		return ch, p.results[id]
	}
	ch := make(chan judge, 1)
	ctx, cancel := context.WithTimeout(context.Background(), p.t.Budget)
	f := newFixture(ctx, p.t, id)
	p.started[id] = ch
	p.results[id] = f
	go func() {
		defer cancel()
		defer f.cleanup()
		ch <- runSafely(f, p.rules[id].run)
	}()
	return ch, f
}

func runSafely(f *fixture, run workload) (j judge) {
	defer func() {
		if r := recover(); r != nil {
			stack := string(debug.Stack())
			j = func() {
				f.ev.Notef("panic: %v\n%s", r, stack)
				ginkgo.Fail(fmt.Sprintf("the target panicked: %v", r))
			}
		}
	}()
	if err := f.open(); err != nil {
		return f.failed(err, "opening the broker")
	}
	return run(f)
}

// expect is gomega.Expect with the rule's own failure text.
func expect(actual any) gomega.Assertion { return gomega.Expect(actual) }
