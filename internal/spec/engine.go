package spec

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// DefaultMaxConcurrent bounds a Concurrent set's bodies running at once:
// more than any suite's rules, so the longest rule starts at once wherever
// the catalog puts it. Most rules wait (a window, an ack wait, a
// redelivery); a rule that needs the processors holds a share of them
// (ItRace).
const DefaultMaxConcurrent = 32

// Run is the engine: it runs the selected rules of the set and returns
// their results in the catalog's order. The kit's CLI calls it directly;
// the Ginkgo and go test drivers map the same outcomes onto specs and
// subtests. Cancelling ctx ends the running rules (skipped, as an
// interrupted run) and starts no more.
func (s *Set) Run(ctx context.Context, o target.RunOptions) []verdict.Result {
	// Results are told (Progress) in the set's order, as each prefix of
	// it is done: the terminal lists the rules in order whatever order
	// they end in.
	var (
		mu      sync.Mutex
		results []verdict.Result
		done    = map[string]verdict.Result{}
		told    int
	)
	add := func(res verdict.Result) {
		mu.Lock()
		defer mu.Unlock()
		results = append(results, res)
		done[res.Rule] = res
		for told < len(s.rules) {
			r, ok := done[s.rules[told].id]
			if !ok {
				break
			}
			told++
			if o.Progress != nil {
				o.Progress(r)
			}
		}
	}
	s.probe(ctx)
	var ids []string
	for _, ru := range s.rules {
		switch {
		case len(o.Rules) > 0 && !slices.Contains(o.Rules, ru.id):
			add(resultOf(ru, o.Target, outcome{v: verdict.Skipped, reason: "filtered out by --rule"}, 0))
		case !s.applies(ru):
			out := s.runWithin(ctx, ru)
			add(resultOf(ru, o.Target, out, 0))
		default:
			ids = append(ids, ru.id)
		}
	}
	if len(ids) > 0 {
		s.prepare(ids)
		s.runAll(ctx, ids, o.Note, func(ru rule, out outcome) { add(resultOf(ru, o.Target, out, ruleWall(out))) })
		s.finish()
	}
	verdict.Sort(results, catalog.Less)
	return results
}

// runAll runs the rules ids (selected, applicable) and hands each outcome
// to done as it comes: a Concurrent set's rules at once (at most
// MaxConcurrent bodies), then each ItAlone rule by itself; any other set's
// one after another, in its order.
func (s *Set) runAll(ctx context.Context, ids []string, note func(string), done func(rule, outcome)) {
	var together, alone []rule
	for _, ru := range s.rules {
		switch {
		case !slices.Contains(ids, ru.id):
		case ru.alone || !s.Concurrent:
			alone = append(alone, ru)
		default:
			together = append(together, ru)
		}
	}
	run := func(ru rule) {
		if ctx.Err() != nil {
			done(ru, outcome{v: verdict.Skipped, reason: "not run: the run was interrupted", ev: &verdict.Evidence{}})
			return
		}
		done(ru, s.runWithin(ctx, ru, note))
	}
	n := s.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, ru := range together {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				done(ru, outcome{v: verdict.Skipped, reason: "not run: the run was interrupted", ev: &verdict.Evidence{}})
				return
			}
			defer func() { <-slots }()
			run(ru)
		}()
	}
	wg.Wait()
	for _, ru := range alone {
		run(ru)
	}
}

// ruleWall is how long a rule ran: its body, or its workload when that
// started before the body and ran longer (a Background rule's "rule wall
// time").
func ruleWall(out outcome) time.Duration {
	d := out.wall
	if out.ev == nil {
		return d
	}
	for _, f := range out.ev.Snapshot().Figures {
		if w, ok := f.Value.(float64); ok && f.Name == "rule wall time" {
			d = max(d, time.Duration(w*float64(time.Second)))
		}
	}
	return d
}

// Collect builds the rules a suite's Register would register against t
// with opts, for the engine instead of Ginkgo: register is the suite's
// Register.
func Collect[T any](register func(T, ...Option), t T, opts ...Option) *Set {
	var s *Set
	register(t, append(opts[:len(opts):len(opts)], Option{into: &s})...)
	return s
}
