package kafka

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/mq"
)

// fakeAdmin answers as a three-broker cluster would, with the configs
// kfake does not serve (producer.id.expiration.ms,
// unclean.leader.election.enable).
type fakeAdmin struct{}

func sp(s string) *string { return &s }

func (fakeAdmin) ListTopics(_ context.Context, topics ...string) (kadm.TopicDetails, error) {
	out := kadm.TopicDetails{}
	for _, t := range topics {
		if t != "orders" {
			out[t] = kadm.TopicDetail{Topic: t, Err: kerr.UnknownTopicOrPartition}
			continue
		}
		ps := kadm.PartitionDetails{}
		for p := range int32(3) {
			ps[p] = kadm.PartitionDetail{Topic: t, Partition: p, Replicas: []int32{1, 2, 3}}
		}
		out[t] = kadm.TopicDetail{Topic: t, Partitions: ps}
	}
	return out, nil
}

func (fakeAdmin) DescribeTopicConfigs(_ context.Context, topics ...string) (kadm.ResourceConfigs, error) {
	return kadm.ResourceConfigs{{Name: topics[0], Configs: []kadm.Config{
		{Key: "retention.ms", Value: sp("604800000")},
		{Key: "cleanup.policy", Value: sp("delete")},
		{Key: "min.insync.replicas", Value: sp("1")},
		{Key: "unclean.leader.election.enable", Value: sp("true")},
	}}}, nil
}

func (fakeAdmin) DescribeBrokerConfigs(_ context.Context, brokers ...int32) (kadm.ResourceConfigs, error) {
	var out kadm.ResourceConfigs
	for _, b := range brokers {
		exp := "86400000"
		if b == 3 {
			exp = "3600000" // one broker set apart
		}
		out = append(out, kadm.ResourceConfig{Configs: []kadm.Config{
			{Key: "producer.id.expiration.ms", Value: sp(exp)},
			{Key: "min.insync.replicas", Value: sp("2")},
		}})
	}
	return out, nil
}

func (fakeAdmin) DescribeGroups(_ context.Context, groups ...string) (kadm.DescribedGroups, error) {
	out := kadm.DescribedGroups{}
	for _, g := range groups {
		if g == "billing" {
			out[g] = kadm.DescribedGroup{Group: g, State: "Stable", Protocol: "range", Members: []kadm.DescribedGroupMember{{ClientID: "billing-1"}}}
		} else {
			out[g] = kadm.DescribedGroup{Group: g, State: "Dead"}
		}
	}
	return out, nil
}

func (fakeAdmin) FetchOffsets(context.Context, string) (kadm.OffsetResponses, error) {
	return kadm.OffsetResponses{}, nil
}

func (fakeAdmin) ListStartOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return kadm.ListedOffsets{}, nil
}

func (fakeAdmin) ListEndOffsets(context.Context, ...string) (kadm.ListedOffsets, error) {
	return kadm.ListedOffsets{}, nil
}

func (fakeAdmin) ApiVersions(context.Context) (kadm.BrokersApiVersions, error) {
	return kadm.BrokersApiVersions{}, nil
}

func (fakeAdmin) ListBrokers(context.Context) (kadm.BrokerDetails, error) {
	return kadm.BrokerDetails{kgo.BrokerMetadata{NodeID: 1}, kgo.BrokerMetadata{NodeID: 2}, kgo.BrokerMetadata{NodeID: 3}}, nil
}

// TestInspectorFakeAdmin reads what kfake does not serve from a fake admin
// answer: the replication factor, unclean election, the producer-id
// expiry (brokers that disagree say so) and a config no broker serves.
func TestInspectorFakeAdmin(t *testing.T) {
	ctx := context.Background()
	in := &Inspector{adm: fakeAdmin{}}
	ti, err := in.Topic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"replication.factor": "3", "partitions": "3", "min.insync.replicas": "1", "unclean.leader.election.enable": "true", "retention.ms": "604800000"} {
		if ti.Settings[k] != want {
			t.Errorf("topic %s = %q, want %q (%v)", k, ti.Settings[k], want, ti.Settings)
		}
	}
	if ti.Config.Replicas != 3 || ti.Config.MaxAge.String() != "168h0m0s" {
		t.Errorf("typed config %+v", ti.Config)
	}
	if _, err := in.Topic(ctx, "gone"); !errors.Is(err, mq.ErrNotFound) {
		t.Errorf("a missing topic: %v", err)
	}
	ci, err := in.Consumer(ctx, "orders", "billing")
	if err != nil || ci.Settings["state"] != "Stable" || ci.Settings["members"] != "billing-1" {
		t.Errorf("group: %+v, %v", ci, err)
	}
	if _, err := in.Consumer(ctx, "orders", "nobody"); !errors.Is(err, mq.ErrNotFound) {
		t.Errorf("a dead group: %v", err)
	}
	si, err := in.Server(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := si.Settings["producer.id.expiration.ms"]; got != "brokers differ: 3600000 / 86400000" {
		t.Errorf("producer.id.expiration.ms = %q", got)
	}
	if got := si.Settings["min.insync.replicas"]; got != "2" {
		t.Errorf("min.insync.replicas = %q", got)
	}
	if got := si.Settings["transactional.id.expiration.ms"]; got != "not served by this cluster's DescribeConfigs" {
		t.Errorf("an unserved config = %q", got)
	}
}
