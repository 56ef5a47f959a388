package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/onceproof/tck/suites/consumer/embedded"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/outbox"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/consumer"
)

func sharedNATS(tb testing.TB) func(context.Context) (mq.Broker, error) {
	tb.Helper()
	e, err := nats.StartEmbedded(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Stop() })
	return func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, e.URL(), nats.Options{}) }
}

type handler func(ctx context.Context, d co.Delivery) error

func (h handler) Handle(ctx context.Context, d co.Delivery) error { return h(ctx, d) }

func factoryOf(h handler) co.Factory {
	return func(context.Context, co.Env) (co.Consumer, error) { return h, nil }
}

// A consumer that panics, blocks or errors on every delivery gets a clear
// verdict with the panic, deadline or error in the evidence, and the run
// goes on to the next rule.
func TestBadConsumersGetClearVerdicts(t *testing.T) {
	broker := sharedNATS(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	timing := consumer.Timing{Settle: 1500 * time.Millisecond, HandleDeadline: 300 * time.Millisecond}
	cases := []struct {
		name    string
		h       handler
		verdict verdict.Verdict
		reason  string
		note    string
	}{
		{"panics", func(context.Context, co.Delivery) error { panic("boom in Handle") },
			verdict.Fail, "the consumer panicked", "boom in Handle"},
		{"blocks", func(ctx context.Context, _ co.Delivery) error { select {} },
			verdict.Unknown, "the consumer blocked", "deadline: Handle("},
		{"errors", func(context.Context, co.Delivery) error { return errors.New("index unavailable") },
			verdict.Fail, "returned an error", "index unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tgt := consumer.Target{Broker: broker, New: factoryOf(c.h), Timing: timing}
			rs := runner.Run("consumer/"+c.name, func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: []string{"CO-1.1", "CO-1.2"}})
			ran := 0
			for _, r := range rs {
				if r.Rule != "CO-1.1" && r.Rule != "CO-1.2" {
					continue
				}
				ran++
				if r.Verdict != c.verdict || !strings.Contains(r.Reason, c.reason) {
					t.Errorf("%s: %s %q, want %s containing %q", r.Rule, r.Verdict, r.Reason, c.verdict, c.reason)
				}
				if !strings.Contains(strings.Join(r.Evidence.Notes, "\n"), c.note) {
					t.Errorf("%s: evidence lacks %q: %v", r.Rule, c.note, r.Evidence.Notes)
				}
			}
			if ran != 2 {
				t.Errorf("%d of the 2 rules ran: the run did not continue", ran)
			}
			expectNoScratch(t, tmp)
		})
	}
}

// A consumer that does its work in goroutines of its own (as message
// routers do) is crashed like any other: the kit ends the instance by
// cancelling its context and refusing its calls, never by a panic through
// the consumer's goroutines, so the test binary survives every crash rule
// and the rules pass. A consumer that ignores the refusals is refused again.
func TestCrashesInTheConsumersOwnGoroutines(t *testing.T) {
	ref := reference.Reference().Factory()
	router := func(ctx context.Context, env co.Env) (co.Consumer, error) {
		c, err := ref(ctx, env)
		if err != nil {
			return nil, err
		}
		return handler(func(ctx context.Context, d co.Delivery) error {
			// Hand the delivery to a goroutine of the router's and wait
			// for it, detached from Handle's own stack.
			errc := make(chan error, 1)
			go func() {
				err := c.Handle(context.WithoutCancel(ctx), d)
				if errors.Is(err, co.ErrEnded) {
					// Ignore the end and go on, as a careless router would.
					_ = d.Ack(context.Background())
				}
				errc <- err
			}()
			return <-errc
		}), nil
	}
	tgt := consumer.Target{Broker: sharedNATS(t), New: router, Declared: reference.Reference().Declared()}
	rules := []string{"CO-1.3", "CO-2.1", "CO-2.3", "CO-2.5"}
	rs := runner.Run("consumer/router", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: rules})
	refused := 0
	for _, r := range rs {
		if !slices.Contains(rules, r.Rule) {
			continue
		}
		if r.Verdict != verdict.Pass {
			t.Errorf("%s: %s %s", r.Rule, r.Verdict, r.Reason)
		}
		if v, ok := figure(r, "calls refused after death"); ok {
			refused += v
		}
	}
	if refused == 0 {
		t.Error("no call after death was refused: the careless ack after the end was let through or not recorded")
	}
}

// figure reads an int figure of a result's evidence.
func figure(r verdict.Result, name string) (int, bool) {
	for _, f := range r.Evidence.Figures {
		if f.Name == name {
			switch v := f.Value.(type) {
			case int:
				return v, true
			case int64:
				return int(v), true
			case float64:
				return int(v), true
			}
		}
	}
	return 0, false
}

// The reference consumer completes every rule with zero consumer errors
// (issue 10, item 5), run as the CLI runs it: Register under the runner,
// where the context handed to Handle has no deadline, so its nak goes
// through the adapter's own deadline.
func TestReferenceHasNoConsumerErrors(t *testing.T) {
	d := reference.Reference()
	tgt := consumer.Target{Broker: sharedNATS(t), New: d.Factory(), Declared: d.Declared(), Outbox: outbox.Factory, Seed: 1}
	rs := runner.Run("consumer/reference-errors", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{})
	for _, r := range rs {
		n, ok := figure(r, consumer.FigureConsumerErrors)
		if !ok {
			t.Errorf("%s: no %q figure in the evidence", r.Rule, consumer.FigureConsumerErrors)
			continue
		}
		if n != 0 {
			first := ""
			for _, f := range r.Evidence.Figures {
				if f.Name == "first consumer error" {
					first = fmt.Sprint(f.Value)
				}
			}
			t.Errorf("%s: %d consumer errors, want 0; first: %s", r.Rule, n, first)
		}
	}
}

// CO-5.1 records the seed it picked, and a run with Target.Seed set to it
// plays the same schedule: the same broker messages in the same order.
func TestScheduleSeedReplays(t *testing.T) {
	broker := sharedNATS(t)
	d := reference.Reference()
	play := func(seed int64) (int64, []string) {
		t.Helper()
		tgt := consumer.Target{Broker: broker, New: d.Factory(), Declared: d.Declared(), Seed: seed}
		rs := runner.Run("consumer/seed", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: []string{"CO-5.1"}})
		i := slices.IndexFunc(rs, func(r verdict.Result) bool { return r.Rule == "CO-5.1" })
		if i < 0 || rs[i].Verdict != verdict.Pass {
			t.Fatalf("CO-5.1 did not pass: %+v", rs)
		}
		var recorded int64
		for _, f := range rs[i].Evidence.Figures {
			if f.Name == "seed" {
				recorded, _ = f.Value.(int64)
			}
		}
		var published []string
		for _, op := range rs[i].Evidence.Timeline {
			if op.Actor == "kit" && op.Action == "publish" {
				// Message ids end in the rule's and run's own tag.
				published = append(published, runTag.ReplaceAllString(op.Value, ""))
			}
		}
		return recorded, published
	}
	seed, first := play(0)
	if seed == 0 {
		t.Fatal("CO-5.1 recorded no seed")
	}
	if want := consumer.PublishedBy(seed, 0); !slices.Equal(first, want) {
		t.Fatalf("seed %d: published %d messages, not the schedule's %d", seed, len(first), len(want))
	}
	again, second := play(seed)
	if again != seed || !slices.Equal(first, second) {
		t.Fatalf("re-run with seed %d (recorded %d) published another schedule", seed, again)
	}
}

// runTag matches the suffix that makes message ids unique to a rule and run.
var runTag = regexp.MustCompile(`@co-[0-9.]+-[0-9a-f]{6}`)

// A whole Check of the reference consumer ends every goroutine it started:
// workers, Handle calls, broker connections and store handles. The embedded
// server is stopped before the check, so its goroutines must be gone too;
// only goroutines that were running before the test (other tests' servers
// and a deliberately blocked consumer of TestBadConsumersGetClearVerdicts)
// and the adapter's process-wide signal watcher are ignored.
func TestCheckLeavesNoGoroutines(t *testing.T) {
	// The broker adapter arms one process-wide signal watcher on first use
	// (internal/leftovers): it lives as long as the process, by design.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/onceproof/tck/internal/leftovers.watch.func1.1"))
	srv, err := nats.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	d := reference.Reference()
	consumer.Check(t, consumer.Target{
		Broker:   func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, srv.URL(), nats.Options{}) },
		New:      d.Factory(),
		Declared: d.Declared(),
		Outbox:   outbox.Factory,
	}, embedded.NATS())
}

// BenchmarkReferenceSuite measures the wall time of the whole consumer
// suite (every CO rule) against the reference consumer over embedded NATS.
//
//	go test ./suites/consumer -run '^$' -bench ReferenceSuite -benchtime 1x
func BenchmarkReferenceSuite(b *testing.B) {
	broker := sharedNATS(b)
	d := reference.Reference()
	tgt := consumer.Target{Broker: broker, New: d.Factory(), Declared: d.Declared(), Outbox: outbox.Factory, Seed: 1}
	for i := 0; i < b.N; i++ {
		rs := runner.Run("consumer/reference", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{})
		for _, r := range rs {
			if r.Verdict != verdict.Pass {
				b.Fatalf("%s: %s %s", r.Rule, r.Verdict, r.Reason)
			}
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/suite")
}

// A factory that fails on its first start in each rule, one that panics,
// and one that never returns each give the rule a verdict naming the
// consumer's error (never a crash of the test binary), the next rule runs,
// and no rule leaves its scratch folder behind.
func TestBadFactoriesGetClearVerdicts(t *testing.T) {
	broker := sharedNATS(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	timing := consumer.Timing{Settle: 1500 * time.Millisecond, HandleDeadline: 300 * time.Millisecond}
	ref := reference.Reference()
	var mu sync.Mutex
	started := map[string]bool{}
	cases := []struct {
		name    string
		f       co.Factory
		verdict verdict.Verdict
		reason  string
	}{
		{"errs-on-first-start", func(ctx context.Context, env co.Env) (co.Consumer, error) {
			mu.Lock()
			first := !started[env.Rule]
			started[env.Rule] = true
			mu.Unlock()
			if first {
				return nil, errors.New("connection refused by the consumer's database")
			}
			return ref.Factory()(ctx, env)
		}, verdict.Fail, "connection refused by the consumer's database"},
		{"panics", func(context.Context, co.Env) (co.Consumer, error) { panic("boom in the factory") },
			verdict.Fail, "boom in the factory"},
		{"blocks", func(context.Context, co.Env) (co.Consumer, error) { select {} },
			verdict.Unknown, "factory blocked"},
		{"returns-nil", func(context.Context, co.Env) (co.Consumer, error) { return nil, nil },
			verdict.Fail, "no consumer and no error"},
	}
	rules := []string{"CO-1.1", "CO-1.2"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tgt := consumer.Target{Broker: broker, New: c.f, Declared: ref.Declared(), Timing: timing}
			rs := runner.Run("consumer/factory-"+c.name, func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: rules})
			ran := 0
			for _, r := range rs {
				if !slices.Contains(rules, r.Rule) {
					continue
				}
				ran++
				if r.Verdict != c.verdict || !strings.Contains(r.Reason, c.reason) {
					t.Errorf("%s: %s %q, want %s naming %q", r.Rule, r.Verdict, r.Reason, c.verdict, c.reason)
				}
			}
			if ran != len(rules) {
				t.Errorf("%d of the %d rules ran: the run did not continue", ran, len(rules))
			}
			expectNoScratch(t, tmp)
		})
	}
}

// expectNoScratch fails t if a rule left its scratch folder in dir.
func expectNoScratch(t *testing.T, dir string) {
	t.Helper()
	left, _ := os.ReadDir(dir)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "onceproof-CO-") {
			t.Errorf("scratch folder left behind: %s", e.Name())
		}
	}
}

// Every rule draws its versions and its clock's start from the seed it
// records: a run with Target.Seed set to it publishes the same events.
func TestEveryRuleReplaysItsSeed(t *testing.T) {
	broker := sharedNATS(t)
	d := reference.Reference()
	play := func(seed int64) (int64, []string, string) {
		t.Helper()
		tgt := consumer.Target{Broker: broker, New: d.Factory(), Declared: d.Declared(), Seed: seed}
		rs := runner.Run("consumer/seed-all", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: []string{"CO-1.6"}})
		i := slices.IndexFunc(rs, func(r verdict.Result) bool { return r.Rule == "CO-1.6" })
		if i < 0 || rs[i].Verdict != verdict.Pass {
			t.Fatalf("CO-1.6 did not pass: %+v", rs)
		}
		var recorded int64
		start := ""
		for _, f := range rs[i].Evidence.Figures {
			switch f.Name {
			case "seed":
				recorded, _ = f.Value.(int64)
			case "consumer clock start":
				start = fmt.Sprint(f.Value)
			}
		}
		var published []string
		for _, op := range rs[i].Evidence.Timeline {
			if op.Actor == "kit" && op.Action == "publish" {
				published = append(published, runTag.ReplaceAllString(op.Value, ""))
			}
		}
		return recorded, published, start
	}
	seed, first, start := play(0)
	if seed == 0 || start == "" {
		t.Fatalf("CO-1.6 recorded seed %d, clock start %q", seed, start)
	}
	for _, id := range first {
		if strings.HasSuffix(id, ":v1") || strings.HasSuffix(id, ":v2") || strings.HasSuffix(id, ":v3") {
			t.Errorf("published %s: a tame single-digit version", id)
		}
	}
	again, second, start2 := play(seed)
	if again != seed || !slices.Equal(first, second) || start != start2 {
		t.Fatalf("seed %d: %v at %s, then %v at %s", seed, first, start, second, start2)
	}
}
