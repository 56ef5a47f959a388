package nats

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/mq"
)

// The leader-change probe's judgement can fail: each broken outcome is a
// violation, the conforming one is none.
func TestLeaderProbeViolations(t *testing.T) {
	ok := LeaderProbe{ID: "x", Retried: true, RetryDuplicate: true, RetryAfter: 8 * time.Second, Copies: 1, FirstAttempt: 1, Redelivered: 2, LeaderMoved: true}
	if v := ok.Violations(); len(v) != 0 || ok.problem() != "" {
		t.Fatalf("conforming probe: violations %v, problem %q", v, ok.problem())
	}
	for name, tc := range map[string]struct {
		mut  func(*LeaderProbe)
		want string
	}{
		// A producer (or broker) that gives the retry a fresh id: stored
		// again, two copies.
		"fresh id on retry":    {func(p *LeaderProbe) { p.RetryDuplicate, p.Copies = false, 2 }, "de-dupe"},
		"window forgotten":     {func(p *LeaderProbe) { p.Copies = 2 }, "2 copies"},
		"acked publish gone":   {func(p *LeaderProbe) { p.Copies = 0 }, "gone"},
		"never redelivered":    {func(p *LeaderProbe) { p.Redelivered = 0 }, "never came back"},
		"delivery count reset": {func(p *LeaderProbe) { p.Redelivered = 1 }, "not above"},
	} {
		p := ok
		tc.mut(&p)
		v := strings.Join(p.Violations(), "; ")
		if !strings.Contains(v, tc.want) {
			t.Errorf("%s: violations %q, want one with %q", name, v, tc.want)
		}
	}
	// A probe that did not run as intended is no violation but a problem.
	for name, mut := range map[string]func(*LeaderProbe){
		"no leader change": func(p *LeaderProbe) { p.LeaderMoved = false },
		"no retry":         func(p *LeaderProbe) { p.Retried, p.RetryDuplicate = false, false },
		"outside window":   func(p *LeaderProbe) { p.RetryAfter = ProbeWindow },
	} {
		p := ok
		mut(&p)
		if v := p.Violations(); len(v) != 0 || p.problem() == "" {
			t.Errorf("%s: violations %v, problem %q", name, v, p.problem())
		}
	}
}

// retryFreshID is a mutant producer: a retry of an id it already published
// goes out under a new id, so the broker cannot know it is a retry.
type retryFreshID struct {
	mq.Broker
	mu   sync.Mutex
	seen map[string]bool
}

func (r *retryFreshID) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	r.mu.Lock()
	if r.seen[m.ID] {
		m.ID += "-fresh"
	}
	r.seen[m.ID] = true
	r.mu.Unlock()
	return r.Broker.Publish(ctx, topic, m)
}

// On a real cluster, the probe carried across a stream leader kill catches
// a retry that loses its id: KillStreamLeader returns an ErrProbe naming
// the de-dupe violation (BR-2.9 fails with it on the cluster target).
func TestNATSClusterProbeCatchesFreshIDRetry(t *testing.T) {
	containers.Need(t, Image())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	open := func(ctx context.Context) (mq.Broker, error) {
		return Connect(ctx, c.URL, Options{DedupeWindow: ProbeWindow})
	}
	b, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	topic := "probe-mutant"
	if err := b.CreateTopic(ctx, topic, mq.TopicConfig{Retention: mq.Limits, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	cf := &ClusterFaults{C: c, Probe: func(ctx context.Context) (mq.Broker, error) {
		b, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return &retryFreshID{Broker: b, seen: map[string]bool{}}, nil
	}}
	log := &testLog{t: t}
	err = cf.KillStreamLeader(ctx, "BR-2.9", topic, log)
	if !errors.Is(err, ErrProbe) || !strings.Contains(err.Error(), "not reported as a duplicate") {
		t.Fatalf("a retry under a fresh id: KillStreamLeader = %v, want an ErrProbe de-dupe violation", err)
	}
	t.Logf("caught: %v", err)
}

// testLog is a Disrupt log that writes every line to the test's log.
type testLog struct {
	t  *testing.T
	mu sync.Mutex
	// figures holds the last value of each figure.
	figures map[string]any
}

func (l *testLog) Step(actor, action, key string, err error) {
	l.t.Logf("  %s %s %s: %v", actor, action, key, err)
}

func (l *testLog) Note(actor, action, key, result string) {
	l.t.Logf("  %s %s %s: %s", actor, action, key, result)
}

func (l *testLog) Figure(name string, value any, unit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.figures == nil {
		l.figures = map[string]any{}
	}
	l.figures[name] = value
	l.t.Logf("  figure %s: %v %s", name, value, unit)
}

func (l *testLog) Notef(format string, args ...any) { l.t.Logf("  note: "+format, args...) }
