package nemesis

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	natsadapter "github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/checker"
	"github.com/onceproof/tck/containers"
	"github.com/onceproof/tck/history"
	"github.com/onceproof/tck/mq"
)

// A three-node JetStream cluster, a stream with three replicas, and the
// BR-2.9 workload while the stream leader is killed and restarted:
// acknowledged publishes survive (BR-3.1) and are delivered (BR-2.9), a
// retry with the same id across the leader change is still a duplicate
// (the de-dupe window is replicated state), redelivery continues after the
// change, and the leader changes are on the timeline.
func TestNATSClusterLeaderKill(t *testing.T) {
	containers.Need(t, containers.NATSImage())
	if os.Getenv("TCK_NEMESIS_CLUSTER") != "1" {
		// About one run in six ends without a verdict or with a failed
		// assertion not yet understood (see docs/containers.md); opt in.
		t.Skip("the cluster leader-kill run is opt-in: TCK_NEMESIS_CLUSTER=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := containers.StartNATSCluster(ctx, 3, containers.NATSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	// A window far longer than the fault: the retry below falls inside it.
	b, err := natsadapter.Connect(ctx, c.URL, natsadapter.Options{DedupeWindow: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := history.New()
	topic := "nemesis-cluster"
	leaders, err := WatchLeader(c.URL, topic, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer leaders.Close()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	nm := New(rec)
	var healIdx int
	var dupAck mq.PublishAck
	var dupErr error
	copies := -1
	probeAttempt := 0
	dedupeID := "dedupe-across-leader-change"
	fault := func(ctx context.Context) error {
		// The first copy of the de-dupe probe, acknowledged by the old leader.
		// Recorded as enqueues: the probe is part of the queue the consumer
		// drains, so the checker must know it was published.
		h := rec.Invoke("producer", checker.Enqueue, dedupeID)
		if _, err := b.Publish(ctx, topic, mq.Message{ID: dedupeID, Payload: []byte("first")}); err != nil {
			h.Info(err.Error())
			return err
		}
		h.OK("")
		go leaders.Run(wctx, 100*time.Millisecond)
		if err := KillLeader(nm, c, leaders, 5*time.Second)(ctx); err != nil {
			return err
		}
		healIdx = len(rec.Ops())
		// The retry, through the new leader, inside the window: a producer
		// retries with the same id until the stream answers.
		for range 20 {
			h = rec.Invoke("producer", checker.Enqueue, dedupeID)
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			dupAck, dupErr = b.Publish(pctx, topic, mq.Message{ID: dedupeID, Payload: []byte("retry")})
			cancel()
			if dupErr == nil {
				break
			}
			h.Info(dupErr.Error())
			time.Sleep(200 * time.Millisecond)
		}
		if dupErr != nil {
			return nil
		}
		h.OK("duplicate=" + map[bool]string{true: "true", false: "false"}[dupAck.Duplicate])
		// Redelivery on the new leader: a member of a group of its own
		// takes one delivery, does not ack, and gets it again after the ack
		// wait with a higher attempt number.
		if m, err := b.Consumer(ctx, topic, mq.ConsumerConfig{Group: "probe", AckWait: time.Second}); err == nil {
			defer m.Close()
			first, err := m.Fetch(ctx, 1, 3*time.Second)
			if err == nil && len(first) == 1 {
				id := first[0].Message().ID
				rec.Note("probe", "deliver", id, fmt.Sprintf("attempt %d, not acked", first[0].Attempt()))
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) && probeAttempt < 2 {
					ds, _ := m.Fetch(ctx, 10, 2*time.Second)
					for _, d := range ds {
						if d.Message().ID == id && d.Attempt() > probeAttempt {
							probeAttempt = d.Attempt()
							rec.Note("probe", "redeliver", id, fmt.Sprintf("attempt %d", d.Attempt()))
						}
					}
				}
			}
		}
		if all, err := b.ReadAll(ctx, topic); err == nil {
			copies = 0
			for _, m := range all {
				if m.Message.ID == dedupeID {
					copies++
				}
			}
		}
		return nil
	}
	s, err := QueueUnderFault(ctx, b, topic, "kill stream leader", Workload{Messages: 600, Replicas: 3}, rec, fault)
	if err != nil {
		t.Fatal(err)
	}
	stopWatch()
	logSurvival(t, "cluster, stream leader killed", s, rec)
	if s.Lost() {
		t.Errorf("never delivered %v, unexpected %v, missing after heal %v", s.Undelivered, s.Fault.Unexpected, s.MissingAfter)
	}
	if leaders.Changes < 1 {
		t.Errorf("no leader change observed: the fault did not move the stream leader")
	}
	// Redelivery continues after the leader change: the probe's delivery
	// came back; and the workload's own redeliveries after the heal.
	redelivered := 0
	for _, op := range rec.Ops() {
		if op.Action == checker.Dequeue && op.Index > healIdx && op.Outcome == history.OK && !strings.HasSuffix(op.Result, "attempt 1") {
			redelivered++
		}
	}
	if probeAttempt < 2 {
		t.Errorf("no redelivery after the leader change: the probe's unacked delivery never came back (attempt %d)", probeAttempt)
	}
	t.Logf("leader changes %d, redeliveries confirmed after the heal %d; retry across the change: duplicate=%v err=%v, copies stored %d",
		leaders.Changes, redelivered, dupAck.Duplicate, dupErr, copies)
	for _, op := range rec.Ops() {
		if op.Action == "leader" {
			t.Logf("  %v", op)
		}
	}
	if dupErr != nil || !dupAck.Duplicate || copies != 1 {
		t.Errorf("de-dupe across the leader change: duplicate=%v err=%v copies=%d, want a duplicate and one copy", dupAck.Duplicate, dupErr, copies)
	}
	if redelivered == 0 {
		t.Errorf("no redelivery after the leader change")
	}
}
