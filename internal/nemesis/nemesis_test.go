package nemesis_test

// The fault matrix: the suites' real rules, with the nemesis as their
// Disrupt hook. BR-2.9 (and BR-3.1) on a NATS container under each fault
// kind; the ES-2 races on a PostgreSQL container under a restart and a
// kill. There is no workload here: each test builds a suite Target, runs
// the rule through runner.Run with the suite's Register, and asserts on the
// verdict and its evidence. With -v each run also logs a row of the "what
// survived" table of docs/containers.md (scripts/fault-matrix.sh prints
// them).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/nemesis"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
	"github.com/onceproof/tck/suites/eventstore"
)

// queueMessages is BR-2.9's workload size in the fault runs (the suite's
// default is 1000): the fault falls after a third of them were acked.
const queueMessages = 600

// hold is how long each fault lasts before its heal.
const hold = 2 * time.Second

// natsParallel: every natsRun starts NATS containers of its own (the
// fault's victim, and BR-3.1's servers of a rule's own), so the NATS fault
// tests and their subtests are parallel: they mostly wait (the workload's
// acks, the fault's hold, a container's restart). Being parallel, they run
// after the package's sequential tests: TestNATSClusterLeaderKill (which
// asserts no container of the process is left) and the PostgreSQL runs,
// which restart or kill the one shared PostgreSQL container, run alone.
//
// natsRun describes one run of the broker rules on a NATS container.
type natsRun struct {
	fault      nemesis.Kind // "" for none
	syncAlways bool         // sync_interval: always
	memory     bool         // the mutant: streams in memory
	rules      []string
	budget     time.Duration // the target's budget; 0 for 90 s
}

// run starts a NATS container, runs the rules against it with the fault
// as BR-2.9's Disrupt, and returns the results by rule id.
func (c natsRun) run(t *testing.T) map[string]verdict.Result {
	t.Helper()
	containers.Need(t, nats.Image())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var o []nats.ContainerOption
	if c.syncAlways {
		o = append(o, nats.WithSyncAlways())
	}
	n, err := nats.StartContainer(ctx, o...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Remove(context.Background()) })
	client := nats.Client{Options: nats.Options{Memory: c.memory}}
	probe, err := client.Open(ctx, n.URL)
	if err != nil {
		t.Fatal(err)
	}
	caps := probe.Capabilities()
	_ = probe.Close()
	budget := c.budget
	if budget == 0 {
		budget = 90 * time.Second
	}
	tg := broker.Target{
		Open:   func(ctx context.Context) (mq.Broker, error) { return client.Open(ctx, n.URL) },
		Caps:   caps,
		Budget: budget,
	}
	h := kithooks.Broker{
		Windows: kithooks.Windows{Messages: queueMessages},
		// BR-3.1's fault is its own restart of a server of its own.
		Private: func(ctx context.Context) (kithooks.Server, error) {
			s, err := nats.StartContainerServer(ctx, client, o...)
			if err != nil {
				return nil, err
			}
			return restartable{s}, nil
		},
	}
	if c.fault != "" {
		h.Disrupt = func(ctx context.Context, rule, topic string, log verdict.Log) error {
			return n.Disrupt(ctx, string(c.fault), hold, log)
		}
	}
	return byRule(runner.Run("broker/nats=container", func() { broker.Register(tg, spec.With(h)) }, runner.Options{Rules: c.rules}))
}

// restartable is a NATS server of a rule's own as the broker suite
// restarts it.
type restartable struct{ nats.Server }

func (s restartable) Restart(ctx context.Context, how kithooks.Restart) error {
	return s.Server.Restart(ctx, how == kithooks.Abrupt)
}

func byRule(rs []verdict.Result) map[string]verdict.Result {
	out := map[string]verdict.Result{}
	for _, r := range rs {
		out[r.Rule] = r
	}
	return out
}

// figure returns the value of the named figure in r's evidence (nil if absent).
func figure(r verdict.Result, name string) any {
	if r.Evidence == nil {
		return nil
	}
	for _, f := range r.Evidence.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

func intFigure(r verdict.Result, name string) int {
	switch v := figure(r, name).(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	}
	return -1
}

// BR-2.9 under each fault on NATS with file storage and the server's
// default sync: every acknowledged publish is delivered (lost = 0,
// unexpected = 0). Under a kill with the default sync the verdict is
// reported, not asserted: this server's durable consumer state can roll
// back (see TestNATSKillSyncAlways and docs/containers.md); it must still
// be decided.
func TestNATSQueueUnderFault(t *testing.T) {
	t.Parallel() // see natsParallel
	for _, k := range nemesis.Kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			r := natsRun{fault: k, rules: []string{"BR-2.9"}}.run(t)["BR-2.9"]
			logQueue(t, string(k)+" (default sync)", r)
			switch {
			case r.Verdict == verdict.Unknown:
				t.Errorf("BR-2.9 under %s undecided: %s", k, r.Reason)
			case r.Verdict != verdict.Pass && k != nemesis.Kill:
				t.Errorf("BR-2.9 under %s: %s: %s", k, r.Verdict, r.Reason)
			}
			if intFigure(r, "acked publishes") <= 0 {
				t.Errorf("%s: the workload acknowledged nothing", k)
			}
			if !faultOnTimeline(r) {
				t.Errorf("%s: the fault is not on BR-2.9's timeline", k)
			}
		})
	}
}

// Under a kill with every write fsynced (sync_interval: always), BR-2.9
// passes.
func TestNATSKillSyncAlways(t *testing.T) {
	t.Parallel() // see natsParallel
	r := natsRun{fault: nemesis.Kill, syncAlways: true, rules: []string{"BR-2.9"}}.run(t)["BR-2.9"]
	logQueue(t, "kill-start (sync always)", r)
	if r.Verdict != verdict.Pass {
		t.Errorf("BR-2.9: %s: %s", r.Verdict, r.Reason)
	}
}

// The mutant: streams in memory. The kill loses acknowledged messages and
// the real BR-2.9 fails: proof that the fault run can fail.
//
// The lost messages never come, so the workload runs to its deadline: a
// 30 s budget (the file-stream runs take about 10 s with their fault) keeps
// that wait from being the package's longest.
func TestNATSMemoryStreamsFailUnderKill(t *testing.T) {
	t.Parallel() // see natsParallel
	r := natsRun{fault: nemesis.Kill, memory: true, rules: []string{"BR-2.9"}, budget: 30 * time.Second}.run(t)["BR-2.9"]
	logQueue(t, "kill-start, streams in memory (mutant)", r)
	if r.Verdict != verdict.Fail {
		t.Fatalf("memory streams under a kill: BR-2.9 %s (%s), want fail", r.Verdict, r.Reason)
	}
}

// BR-3.1 restarts a server of its own gracefully (stop-start) and abruptly
// (kill-start): file streams keep every acknowledged publish, memory
// streams (the mutant) lose them and the rule fails.
func TestNATSRestartRule(t *testing.T) {
	t.Parallel() // see natsParallel
	for _, memory := range []bool{false, true} {
		name := map[bool]string{false: "file", true: "memory (mutant)"}[memory]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := natsRun{memory: memory, rules: []string{"BR-3.1"}}.run(t)["BR-3.1"]
			for _, how := range []kithooks.Restart{kithooks.Graceful, kithooks.Abrupt} {
				acked, missing := intFigure(r, string(how)+" restart: acked"), intFigure(r, string(how)+" restart: missing")
				fault := map[kithooks.Restart]nemesis.Kind{kithooks.Graceful: nemesis.Restart, kithooks.Abrupt: nemesis.Kill}[how]
				if acked < 0 {
					// The judge stopped at the round before: not measured.
					continue
				}
				t.Logf("table: | BR-3.1, %s, streams in %s | %s | %d acked | - | %d/%d | the rule's own server restarted |",
					fault, strings.Fields(name)[0], r.Verdict, acked, acked-missing, acked)
			}
			want := verdict.Pass
			if memory {
				want = verdict.Fail
			}
			if r.Verdict != want {
				t.Errorf("BR-3.1 with streams in %s: %s (%s), want %s", name, r.Verdict, r.Reason, want)
			}
		})
	}
}

func faultOnTimeline(r verdict.Result) bool {
	if r.Evidence == nil {
		return false
	}
	for _, op := range r.Evidence.Timeline {
		if op.Actor == "nemesis" {
			return true
		}
	}
	return false
}

// logQueue logs BR-2.9's figures and its table row.
func logQueue(t *testing.T, what string, r verdict.Result) {
	t.Helper()
	t.Logf("%s: BR-2.9 %s %s", what, r.Verdict, r.Reason)
	var notes []string
	if n := intFigure(r, "indeterminate publishes"); n > 0 {
		notes = append(notes, fmt.Sprintf("%d publish(es) indeterminate", n))
	}
	if n := intFigure(r, "delivered, ack never confirmed"); n > 0 {
		notes = append(notes, fmt.Sprintf("%d ack(s) unconfirmed", n))
	}
	if n := intFigure(r, "duplicated"); n > 0 {
		notes = append(notes, fmt.Sprintf("%d duplicate deliveries", n))
	}
	if n := intFigure(r, "unexpected"); n > 0 {
		notes = append(notes, fmt.Sprintf("%d unexpected", n))
	}
	t.Logf("table: | BR-2.9, %s | %s | %d/%d acked | %d | - | %s |", what, r.Verdict,
		intFigure(r, "acked publishes"), intFigure(r, "messages"), intFigure(r, "lost (acked, never delivered)"), strings.Join(notes, "; "))
	if r.Verdict != verdict.Pass && r.Evidence != nil {
		for _, n := range r.Evidence.Notes {
			t.Logf("  note: %s", n)
		}
	}
}

// pgRun runs the ES-2 race rules on a PostgreSQL container with fault k as
// their Disrupt (each rule restarts the server once, in its middle), the
// store wrapped by wrap (a mutant) when set.
func pgRun(t *testing.T, k nemesis.Kind, wrap func(es.EventStore) es.EventStore, rules []string) map[string]verdict.Result {
	t.Helper()
	p := sharedPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := pgstore.Open(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	victim := nemesis.Target{Name: "postgres", Container: p.Container, Ready: p.Ready}
	tg := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) {
			var s es.EventStore = db.Store()
			if wrap != nil {
				s = wrap(s)
			}
			return s, nil
		},
		Caps:    es.Capabilities{PreCheck: precheck.New},
		Timeout: 90 * time.Second,
	}
	hooks := spec.With(kithooks.EventStore{Disrupt: func(ctx context.Context, rule string, log verdict.Log) error {
		return nemesis.New(log).Apply(ctx, k, victim, time.Second)
	}})
	return byRule(runner.Run("eventstore/postgres=container", func() { eventstore.Register(tg, hooks) }, runner.Options{Rules: rules}))
}

// pg is the one PostgreSQL container of the package's race runs: each run
// restarts or kills it in the middle of its rules and waits until it is
// ready again, and the race rules' streams are unique to the rule and trial
// (suites/eventstore), so no run needs a fresh database; initdb costs
// seconds per container. TestMain removes it (after TestNATSClusterLeaderKill,
// which runs first and asserts that no container of the process is left).
var pg struct {
	once sync.Once
	p    *containers.Postgres
	err  error
}

func sharedPostgres(t *testing.T) *containers.Postgres {
	t.Helper()
	containers.Need(t, containers.PostgresImage())
	pg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pg.p, pg.err = containers.StartPostgres(ctx, containers.PostgresOptions{})
	})
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	return pg.p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.p != nil {
		_ = pg.p.Remove(context.Background())
	}
	os.Exit(code)
}

var raceRules = []string{"ES-2.1", "ES-2.2", "ES-2.3", "ES-2.4", "ES-2.5", "ES-2.6"}

// logRaces logs each race rule's fault figures and table row.
func logRaces(t *testing.T, what string, rs map[string]verdict.Result, rules []string) {
	t.Helper()
	for _, id := range rules {
		r, ok := rs[id]
		if !ok {
			t.Errorf("%s: no result", id)
			continue
		}
		t.Logf("table: | %s, PostgreSQL %s | %s | %d trials (%d during the fault) | - | - | %d indeterminate appends, %d lost trials |",
			id, what, r.Verdict, intFigure(r, "trials run"), intFigure(r, "trials during the fault"),
			intFigure(r, "indeterminate appends from the fault on"), intFigure(r, "trials lost to the fault (setup append failed)"))
		if r.Verdict != verdict.Pass {
			t.Logf("  %s %s: %s", id, r.Verdict, r.Reason)
		}
	}
}

// The ES-2 races under a PostgreSQL restart and a kill in their middle:
// every rule passes, and the fault fell inside each.
func TestPostgresRacesUnderFault(t *testing.T) {
	for _, k := range []nemesis.Kind{nemesis.Restart, nemesis.Kill} {
		t.Run(string(k), func(t *testing.T) {
			rs := pgRun(t, k, nil, raceRules)
			// A race rule a loaded host left short of its contended trials
			// is honestly unknown; one rerun, as the self-test gives its
			// race rules. A fail is never rerun.
			var again []string
			for _, id := range raceRules {
				if rs[id].Verdict == verdict.Unknown {
					t.Logf("%s: unknown, run again: %s", id, rs[id].Reason)
					again = append(again, id)
				}
			}
			if len(again) > 0 {
				// Only the rules run again: the rerun reports the others
				// as filtered out.
				rerun := pgRun(t, k, nil, again)
				for _, id := range again {
					rs[id] = rerun[id]
				}
			}
			logRaces(t, string(k), rs, raceRules)
			for _, id := range raceRules {
				r := rs[id]
				if r.Verdict != verdict.Pass {
					t.Errorf("%s under %s: %s: %s", id, k, r.Verdict, r.Reason)
				}
				if !faultOnTimeline(r) && intFigure(r, "fault duration") < 0 {
					t.Errorf("%s under %s: no fault in its evidence", id, k)
				}
			}
		})
	}
}

// swallow is the mutant: a store that reports success when the database
// cannot be reached ("it will be retried later"): a phantom success.
type swallow struct{ es.EventStore }

func (s swallow) Append(ctx context.Context, st es.Stream) error {
	err := s.EventStore.Append(ctx, st)
	if err != nil && !errors.Is(err, es.ErrConflict) {
		return nil
	}
	return err
}

// Under a kill, the swallowing store's phantom successes fail the real
// race rules: proof that the fault run can fail. ES-2.5 is the rule that
// must fail; the other five run (each with a kill of its own) only for the
// table of docs/containers.md, when scripts/fault-matrix.sh asks
// (TCK_FAULT_MATRIX=1).
func TestPostgresRacesCatchPhantomSuccess(t *testing.T) {
	rules := []string{"ES-2.5"}
	if os.Getenv("TCK_FAULT_MATRIX") == "1" {
		rules = raceRules
	}
	rs := pgRun(t, nemesis.Kill, func(s es.EventStore) es.EventStore { return swallow{s} }, rules)
	logRaces(t, "kill-start, errors swallowed (mutant)", rs, rules)
	var failed []string
	for _, id := range rules {
		if rs[id].Verdict == verdict.Fail {
			failed = append(failed, id)
		}
	}
	// ES-2.5 is the rule that says it: reported successes equal streams stored.
	if r := rs["ES-2.5"]; r.Verdict != verdict.Fail {
		t.Fatalf("a store that hides its errors: ES-2.5 under a kill %s (%s), want fail", r.Verdict, r.Reason)
	}
	t.Logf("failed: %s", strings.Join(failed, ", "))
}
