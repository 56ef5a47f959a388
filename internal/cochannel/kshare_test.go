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

// TestKafkaShareProxy runs a franz-go share-group member through the kit's
// proxy: its fetches, the records it is handed (with the broker's
// delivery count) and its acknowledgements by type are seen by sequence;
// an accept the hook drops never reaches the broker, so the record's lock
// runs out and it is delivered again (delivery count 2), and accepted then.
func TestKafkaShareProxy(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": "500",
		"group.share.delivery.count.limit":    "5",
		"share.record.lock.sweep.interval.ms": "50",
		"group.share.heartbeat.interval.ms":   "100",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := OpenKafkaShare(ctx, c.ListenAddrs(), "CO-9.9", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	type seen struct {
		kind  string
		seq   uint64
		count int
	}
	var mu sync.Mutex
	var evs []seen
	dropped := false
	ch.Watch(func(ev coservice.Event, st coservice.Stage) bool {
		mu.Lock()
		defer mu.Unlock()
		if st != coservice.BeforeForward || ev.Kind == coservice.Pull {
			return true
		}
		evs = append(evs, seen{ev.Kind, ev.Seq, ev.Delivered})
		if ev.Kind == coservice.Ack && ev.Seq == 2 && !dropped {
			dropped = true
			return false
		}
		return true
	})
	env, err := ch.Env("W1")
	if err != nil {
		t.Fatal(err)
	}
	if env[coservice.EnvBroker] != coservice.BrokerKafkaShare || env[coservice.EnvGroup] == "" || env[coservice.EnvGroup] == coservice.DurableName {
		t.Fatalf("env %v: want %s and a share group of the rule's own", env, coservice.BrokerKafkaShare)
	}
	for i := 0; i < 3; i++ {
		if _, _, err := ch.Publish(ctx, mq.Message{ID: "m", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ch.Outstanding(ctx); err != nil || n != 3 {
		t.Errorf("outstanding %d, %v before any member joined: want 3", n, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env[coservice.EnvKafkaBrokers]), kgo.ShareGroup(env[coservice.EnvGroup]),
		kgo.ConsumeTopics(env[coservice.EnvTopic]), kgo.ShareMaxRecords(1), kgo.ShareMaxRecordsStrict(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	accepted := map[int64]int{}
	for len(accepted) < 3 || accepted[1] < 2 {
		fs := cl.PollRecords(ctx, 1)
		if err := ctx.Err(); err != nil {
			mu.Lock()
			t.Fatalf("%v; seen %v", err, evs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == 0 && accepted[0] == 0 {
				r.Ack(kgo.AckRelease) // handed back once: a nak
				accepted[0] = -1
				return
			}
			r.Ack(kgo.AckAccept)
			accepted[r.Offset]++
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	t.Logf("seen %v", evs)
	has := func(want seen) bool {
		for _, e := range evs {
			if e == want {
				return true
			}
		}
		return false
	}
	for _, want := range []seen{{coservice.Deliver, 1, 1}, {coservice.Nak, 1, 0}, {coservice.Deliver, 1, 2}, {coservice.Ack, 1, 0},
		{coservice.Deliver, 2, 1}, {coservice.Ack, 2, 0}, {coservice.Deliver, 2, 2}, {coservice.Deliver, 3, 1}, {coservice.Ack, 3, 0}} {
		if !has(want) {
			t.Errorf("no %v among %v", want, evs)
		}
	}
	mu.Unlock()
	if n, err := ch.Outstanding(ctx); err != nil || n != 0 {
		t.Errorf("outstanding %d, %v: want 0 (every record accepted)", n, err)
	}
}

// TestPackAcks: acknowledgement batches read per offset (one type for the
// range, or one per offset) and packed again without a dropped offset keep
// every other offset's type, in batches of consecutive offsets.
func TestPackAcks(t *testing.T) {
	acks := append(expandAcks(10, 12, []int8{1}), expandAcks(13, 15, []int8{2, 1, 3})...)
	acks = append(acks, expandAcks(20, 20, nil)...) // no type: accept
	var kept []shareAck
	for _, a := range acks {
		if a.off != 11 { // dropped
			kept = append(kept, a)
		}
	}
	f, l, ty := packAcks(kept)
	want := [][3]any{{int64(10), int64(10), []int8{1}}, {int64(12), int64(15), []int8{1, 2, 1, 3}}, {int64(20), int64(20), []int8{1}}}
	if len(f) != len(want) {
		t.Fatalf("batches %v %v %v, want %v", f, l, ty, want)
	}
	for i, w := range want {
		if f[i] != w[0] || l[i] != w[1] || len(ty[i]) != len(w[2].([]int8)) {
			t.Errorf("batch %d: %d-%d %v, want %v", i, f[i], l[i], ty[i], w)
			continue
		}
		for j, x := range w[2].([]int8) {
			if ty[i][j] != x {
				t.Errorf("batch %d offset %d: type %d, want %d", i, f[i]+int64(j), ty[i][j], x)
			}
		}
	}
	if kinds := []string{acks[3].kind(), acks[4].kind(), acks[5].kind()}; kinds[0] != coservice.Nak || kinds[1] != coservice.Ack || kinds[2] != coservice.Term {
		t.Errorf("kinds of release, accept, reject: %v", kinds)
	}
}
