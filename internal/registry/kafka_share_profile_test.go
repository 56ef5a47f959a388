package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

const shareProfile = `schema: onceproof.profile/v1
name: share
brokers:
  - name: events
    kind: kafka
    kafkaShare: {recordLockDuration: 2s, deliveryCountLimit: %d}
    streams:
      - name: orders
        maxAge: 168h
        consumers:
          - name: workers
            kafkaShare: {deliveryCountLimit: %d}
`

// TestShareCertification: BR-6.1 on broker/kafka-share at a kafka://
// address reads the cluster's group.share.* broker configs and the share
// group's group config (kfake serves both through DescribeConfigs) and
// compares them with the profile: a declaration that matches passes, a
// cluster or group delivery limit that differs fails naming the setting.
func TestShareCertification(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": "2000",
		"group.share.delivery.count.limit":    "3",
		"share.record.lock.sweep.interval.ms": "50",
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := c.ListenAddrs()[0]
	// The team's topic and share group: a member joins once, and the
	// group's delivery limit is a group config of 4.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	c.SetGroupConfigs("workers", map[string]string{"share.delivery.count.limit": "4"})
	member, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ShareGroup("workers"), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	member.PollFetches(pctx)
	pcancel()

	k, ok := Targets().Get("broker/kafka-share")
	if !ok {
		t.Fatal("no broker/kafka-share")
	}
	run := func(cluster, group int) verdict.Result {
		p, err := profile.Parse("share.yaml", []byte(fmt.Sprintf(shareProfile, cluster, group)))
		if err != nil {
			t.Fatal(err)
		}
		st, err := k.Start(ctx, target.Ref{Suite: "broker", Name: "kafka-share", Address: "kafka://" + seed, Opts: target.Options{Profile: p}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Stop()
		if got := st.Info.Config["declared share group workers"]; !strings.Contains(got, "share.delivery.count.limit") {
			t.Errorf("the report does not show the declared group config: %q", got)
		}
		for _, r := range st.Rules().Run(ctx, target.RunOptions{Target: "broker/kafka-share", Rules: []string{"BR-6.1"}}) {
			if r.Rule == "BR-6.1" {
				return r
			}
		}
		t.Fatal("BR-6.1 did not run")
		return verdict.Result{}
	}
	if r := run(3, 4); r.Verdict != verdict.Pass {
		t.Errorf("matching declaration: %s: %s", r.Verdict, r.Reason)
	}
	if r := run(5, 4); r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "group.share.delivery.count.limit: declared 5, server 3") {
		t.Errorf("cluster limit 3 declared 5: %s: %s", r.Verdict, r.Reason)
	}
	if r := run(3, 2); r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "share.delivery.count.limit: declared 2, server 4") {
		t.Errorf("group limit 4 declared 2: %s: %s", r.Verdict, r.Reason)
	}
}
