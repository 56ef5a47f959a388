package cochannel

import (
	"context"
	"github.com/onceproof/tck/internal/coservice"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/mq"
)

// TestKafkaProxy runs a franz-go consumer through the kit's proxy in front
// of a three-broker kfake: every connection goes through the worker's
// listeners (the addresses rewritten), deliveries and commits are seen by
// sequence, and a dropped commit is answered by the proxy and never
// reaches the broker.
func TestKafkaProxy(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := OpenKafka(ctx, c.ListenAddrs(), "CO-9.9")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var mu sync.Mutex
	seen := map[string][]uint64{}
	ch.Watch(func(ev coservice.Event, st coservice.Stage) bool {
		mu.Lock()
		defer mu.Unlock()
		if st == coservice.BeforeForward {
			seen[ev.Kind] = append(seen[ev.Kind], ev.Seq)
			if ev.Kind == coservice.Ack && ev.Seq == 2 && len(seen["dropped"]) == 0 {
				seen["dropped"] = append(seen["dropped"], ev.Seq)
				return false
			}
		}
		return true
	})
	env, err := ch.Env("W1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		seq, _, err := ch.Publish(ctx, mq.Message{ID: "m", Payload: []byte("x")})
		if err != nil || seq != uint64(i+1) {
			t.Fatalf("publish %d: seq %d, %v", i, seq, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env[coservice.EnvKafkaBrokers]), kgo.ConsumerGroup(env[coservice.EnvGroup]),
		kgo.ConsumeTopics(env[coservice.EnvTopic]), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < 3 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if err := cl.CommitRecords(ctx, r); err != nil {
				t.Errorf("commit %d: %v", r.Offset, err)
			}
		})
	}
	mu.Lock()
	t.Logf("seen %v", seen)
	if len(seen[coservice.Pull]) == 0 || len(seen[coservice.Deliver]) < 3 {
		t.Errorf("pulls %v, deliveries %v", seen[coservice.Pull], seen[coservice.Deliver])
	}
	if acks := seen[coservice.Ack]; len(acks) < 3 || acks[0] != 1 || acks[len(acks)-1] != 3 {
		t.Errorf("acks %v: want 1, 2 (dropped), 2, 3 (the commit of 3 covers the dropped 2)", acks)
	}
	mu.Unlock()
	if n, err := ch.Outstanding(ctx); err != nil || n != 0 {
		t.Errorf("outstanding %d, %v", n, err)
	}
	kc := ch.(*kafkaChannel)
	kc.mu.Lock()
	nodes := len(kc.nodes["W1"].relays)
	kc.mu.Unlock()
	if nodes < 2 {
		t.Errorf("%d listeners for W1: want one per broker the cluster named (3) besides the seed", nodes)
	}
}
