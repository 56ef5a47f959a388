package nemesis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	natsadapter "github.com/onceproof/tck/adapters/broker/nats"
	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/checker"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
)

// queueRun runs the BR-2.9/BR-3.1 workload on a fresh NATS container with
// fault k, the kit's client storing streams in files (or in memory, the
// mutant), and returns what survived.
func queueRun(t *testing.T, k Kind, memory bool) (Survival, *history.Recorder) {
	return queueRunSync(t, k, memory, false)
}

func queueRunSync(t *testing.T, k Kind, memory, syncAlways bool) (Survival, *history.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := containers.StartNATS(ctx, containers.NATSOptions{SyncAlways: syncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Remove(context.Background())
	b, err := natsadapter.Connect(ctx, n.URL, natsadapter.Options{Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := history.New()
	nm := New(rec)
	tgt := Target{Name: "nats", Container: n.Container, Ready: n.Ping}
	w := Workload{Messages: 600}
	if memory {
		w.Drain = 5 * time.Second // the stream is gone: nothing more will come
	}
	s, err := QueueUnderFault(ctx, b, fmt.Sprintf("nemesis-%s", k), string(k), w, rec,
		func(ctx context.Context) error { return nm.Apply(ctx, k, tgt, 2*time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	return s, rec
}

// BR-2.9 and BR-3.1 under each fault, on NATS with file storage and the
// server's default sync: everything acknowledged is still stored after the
// heal (BR-3.1), and, but for a kill, delivered (BR-2.9: lost = 0,
// unexpected = 0). Under a kill with the default sync, BR-2.9 is reported,
// not asserted: this server's durable consumer state can roll back and
// wedge (see TestNATSKillSyncAlways and docs/containers.md).
func TestNATSQueueSurvivesEachFault(t *testing.T) {
	containers.Need(t, containers.NATSImage())
	for _, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			s, rec := queueRun(t, k, false)
			logSurvival(t, string(k)+" (default sync)", s, rec)
			if len(s.MissingAfter) > 0 {
				t.Errorf("BR-3.1 under %s: %d acknowledged messages no longer stored: %v", k, len(s.MissingAfter), s.MissingAfter)
			}
			q := s.Fault
			if len(q.Unexpected) > 0 {
				t.Errorf("BR-2.9 under %s: unexpected %v", k, q.Unexpected)
			}
			if len(s.Undelivered) > 0 && k != Kill {
				t.Errorf("BR-2.9 under %s: lost (acknowledged, never delivered) %d: %v", k, len(s.Undelivered), s.Undelivered)
			}
			if q.Acked == 0 || q.Distinct == 0 {
				t.Errorf("%s: the workload did nothing (acked %d, delivered %d)", k, q.Acked, q.Distinct)
			}
		})
	}
}

// Under a kill with every write fsynced (sync_interval: always), BR-2.9 and
// BR-3.1 both hold.
func TestNATSKillSyncAlways(t *testing.T) {
	containers.Need(t, containers.NATSImage())
	s, rec := queueRunSync(t, Kill, false, true)
	logSurvival(t, "kill-start (sync always)", s, rec)
	if s.Lost() {
		t.Errorf("never delivered %v, unexpected %v, missing after heal %v", s.Undelivered, s.Fault.Unexpected, s.MissingAfter)
	}
}

func logSurvival(t *testing.T, what string, s Survival, rec *history.Recorder) {
	t.Helper()
	q := s.Fault
	t.Logf("%s: published %d, acked %d, indeterminate %d (recovered %d), confirmed-ack deliveries %d distinct (%d duplicates), never delivered %d, ack unconfirmed %d, unexpected %d, stored after heal %d/%d, consumer stalls %d",
		what, q.Attempted, q.Acked, q.Info, len(q.Recovered), q.Distinct, q.Duplicates, len(s.Undelivered), len(s.Unconfirmed), len(q.Unexpected), s.StoredAfter, q.Acked, s.Stalls)
	for _, op := range rec.Ops() {
		if op.Actor != "producer" && op.Action != checker.Dequeue {
			t.Logf("  %v", op)
		}
	}
	ev := &verdict.Evidence{}
	s.Evidence(ev, rec)
}

// The mutant: streams in memory. A restart must lose acknowledged messages,
// and the workload must see it: proof that the check above can fail.
func TestNATSMemoryStreamsLoseAckedOnRestart(t *testing.T) {
	containers.Need(t, containers.NATSImage())
	s, _ := queueRun(t, Kill, true)
	t.Logf("memory streams after kill: acked %d, never delivered %d, missing after heal %d", s.Fault.Acked, len(s.Undelivered), len(s.MissingAfter))
	if !s.Lost() || len(s.MissingAfter) == 0 {
		t.Fatalf("memory streams survived a kill: the check cannot fail")
	}
}

// raceRun races creates on a PostgreSQL container while fault k falls.
func raceRun(t *testing.T, k Kind, wrap func(es.EventStore) es.EventStore) RaceResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := containers.StartPostgres(ctx, containers.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove(context.Background())
	db, err := pgstore.Open(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var store es.EventStore = db.Store()
	if wrap != nil {
		store = wrap(store)
	}
	rec := history.New()
	nm := New(rec)
	tgt := Target{Name: "postgres", Container: p.Container, Ready: func(ctx context.Context) error {
		return containers.PostgresPing(ctx, p.Endpoint("5432/tcp"))
	}}
	r, err := RaceUnderFault(ctx, store, string(k), 120, 6, 30, rec,
		func(ctx context.Context) error { return nm.Apply(ctx, k, tgt, time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	ev := &verdict.Evidence{}
	r.Evidence(ev, rec)
	return r
}

// ES-2.5 under a PostgreSQL restart in the middle of the race: reported
// successes equal streams stored, no phantom success.
func TestPostgresRaceSurvivesRestart(t *testing.T) {
	containers.Need(t, containers.PostgresImage())
	for _, k := range []Kind{Restart, Kill} {
		t.Run(string(k), func(t *testing.T) {
			r := raceRun(t, k, nil)
			t.Logf("%s: %d trials, %d successes, %d conflicts, %d indeterminate (%d recovered), %d stored, %d phantom, %d unexplained",
				k, r.Trials, r.Successes, r.Conflicts, r.Indeterminate, r.Recovered, r.Stored, len(r.Phantom), len(r.Unexplained))
			if !r.Valid() {
				t.Errorf("phantom %v, unexplained %v", r.Phantom, r.Unexplained)
			}
			if r.Indeterminate == 0 {
				t.Errorf("the fault touched no append: it fell outside the race")
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

func TestPostgresRaceCatchesPhantomSuccess(t *testing.T) {
	containers.Need(t, containers.PostgresImage())
	r := raceRun(t, Kill, func(s es.EventStore) es.EventStore { return swallow{s} })
	t.Logf("swallowing store: %d successes, %d stored, %d phantom", r.Successes, r.Stored, len(r.Phantom))
	if len(r.Phantom) == 0 {
		t.Fatalf("a store that hides its errors passed: the check cannot fail")
	}
}
