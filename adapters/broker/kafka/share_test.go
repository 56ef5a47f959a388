package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// shareNext fetches until a delivery comes or the wait ends.
func shareNext(t *testing.T, ctx context.Context, c mq.Consumer, wait time.Duration) mq.Delivery {
	t.Helper()
	end := time.Now().Add(wait)
	for time.Now().Before(end) {
		ds, err := c.Fetch(ctx, 1, 500*time.Millisecond)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if len(ds) > 0 {
			return ds[0]
		}
	}
	return nil
}

// TestShareMechanics: on kfake a share-group member sees the broker's
// delivery count rise with each RELEASE, the record archived at the limit
// (the start offset passes it: Acked and the max-deliver signal), and an
// accepted record not delivered again.
func TestShareMechanics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kt, err := kafka.RunEmbedded(ctx, kafka.WithShare(kafka.KitShare))
	if err != nil {
		t.Fatal(err)
	}
	defer kt.Stop()
	b, err := kt.Client.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CreateTopic(ctx, "t", mq.TopicConfig{Retention: mq.Limits}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Consumer(ctx, "t", mq.ConsumerConfig{Group: "g", AckWait: kafka.KitShare.LockDuration})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sig, err := b.(mq.MaxDeliverWatcher).WatchMaxDeliver(ctx, "t", "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := b.Publish(ctx, "t", mq.Message{ID: id, Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	var attempts []int
	for {
		d := shareNext(t, ctx, c, 3*time.Second)
		if d == nil {
			t.Fatalf("no delivery after attempts %v", attempts)
		}
		if d.Message().ID == "b" {
			if err := d.Ack(ctx); err != nil {
				t.Fatalf("ack: %v", err)
			}
			break
		}
		attempts = append(attempts, d.Attempt())
		if err := d.Nak(ctx, 0); err != nil {
			t.Fatalf("nak: %v", err)
		}
	}
	if len(attempts) != kafka.KitShare.DeliveryLimit || attempts[0] != 1 || attempts[len(attempts)-1] != kafka.KitShare.DeliveryLimit {
		t.Fatalf("attempts %v, want 1..%d", attempts, kafka.KitShare.DeliveryLimit)
	}
	select {
	case pos := <-sig:
		if pos != "0/0" {
			t.Fatalf("archived signal for %s, want 0/0", pos)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no archived signal")
	}
	acked, err := b.(mq.AckedInspector).Acked(ctx, "t", "g", "0/1")
	if err != nil || !acked {
		t.Fatalf("Acked(0/1) = %v, %v; want true", acked, err)
	}
	if d := shareNext(t, ctx, c, 2*kafka.KitShare.LockDuration); d != nil {
		t.Fatalf("delivered again: %s attempt %d", d.Message().ID, d.Attempt())
	}
}

// TestShareEmbedded runs every BR rule against kfake's share groups: the
// BR-2 rules and the BR-9 share-group rules pass, the others are
// not-applicable with the share group's reason. None may fail. An
// undecided rule is a skip with its reason here, not a failure: kfake
// serves every request from one goroutine of this test's process, and
// beside CPU burners and the rest of make test its lock expiry ran more
// than a second late (BR-2.1, BR-2.7 unknown: "nothing came within 3.5s"),
// a deadline missed that is no evidence either way; the kill matrix (tck
// selftest) still holds the mutants to failing.
func TestShareEmbedded(t *testing.T) {
	kt, err := kafka.RunEmbedded(context.Background(), kafka.WithShare(kafka.KitShare))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kt.Stop() })
	tg := registry.KafkaShareBrokerTarget(kt)
	broker.Check(t, tg.Target, tg.Hooks(), broker.UnknownIsSkip())
}

// TestShareAtAddress: broker/kafka-share at a kafka:// address whose groups
// run with the declared lock and delivery limit (a kfake cluster configured
// so) decides the share rules; a declaration that does not match what the
// cluster runs (a lock of 2 s declared, Kafka's 30 s set) fails BR-9.3 on
// the broker's own announcement.
func TestShareAtAddress(t *testing.T) {
	k, ok := registry.Targets().Get("broker/kafka-share")
	if !ok {
		t.Fatal("no broker/kafka-share in the registry")
	}
	run := func(lockMs string, rules ...string) map[string]verdict.Result {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
			"group.share.record.lock.duration.ms": lockMs,
			"group.share.delivery.count.limit":    "3",
			"share.record.lock.sweep.interval.ms": "50",
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		st, err := k.Start(ctx, target.Ref{Suite: "broker", Name: "kafka-share", Address: "kafka://" + c.ListenAddrs()[0] + "?lock=2s&deliveries=3"})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Stop()
		out := map[string]verdict.Result{}
		for _, r := range st.Rules().Run(ctx, target.RunOptions{Target: "broker/kafka-share", Rules: rules}) {
			out[r.Rule] = r
		}
		return out
	}
	res := run("2000", "BR-2.6", "BR-9.1", "BR-9.3")
	for _, id := range []string{"BR-2.6", "BR-9.1", "BR-9.3"} {
		if r := res[id]; r.Verdict != verdict.Pass {
			t.Errorf("%s: %s: %s", id, r.Verdict, r.Reason)
		}
	}
	if r := run("30000", "BR-9.3")["BR-9.3"]; r.Verdict != verdict.Fail {
		t.Errorf("BR-9.3 with a declared lock of 2s on a cluster running 30s: %s, want fail: %s", r.Verdict, r.Reason)
	}
}
