package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// kafkaView is a Kafka cluster's read-only view as DescribeConfigs would
// give it, for what kfake does not serve (flush.messages, flush.ms).
type kafkaView struct{ topic map[string]string }

func (v kafkaView) Topic(_ context.Context, name string) (mq.TopicInfo, error) {
	return mq.TopicInfo{Name: name, Settings: v.topic}, nil
}
func (kafkaView) Consumer(context.Context, string, string) (mq.ConsumerInfo, error) {
	return mq.ConsumerInfo{}, mq.ErrNotFound
}
func (kafkaView) Server(context.Context) (mq.ServerInfo, error) {
	return mq.ServerInfo{Version: "kafka (test view)", Settings: map[string]string{
		"producer.id.expiration.ms": "86400000", "transactional.id.expiration.ms": "604800000"}}, nil
}
func (kafkaView) Close() error { return nil }

// TestCertifyKafkaFlush: BR-6.1 compares a topic's flush.messages and
// flush.ms with the declared ones, Long.MAX where undeclared: a cluster
// that flushes differently fails naming the setting; one as declared
// passes.
func TestCertifyKafkaFlush(t *testing.T) {
	p, err := profile.Parse("k.yaml", []byte(`schema: onceproof.profile/v1
name: flush
brokers:
  - name: events
    kind: kafka
    durability: {survivePowerLoss: true}
    streams:
      - name: orders
        replicas: 3
        kafka: {minInsyncReplicas: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.DeclaredKafka(p, true)
	if err != nil {
		t.Fatal(err)
	}
	topic := map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "max.message.bytes": "1048588", "cleanup.policy": "delete",
		"min.insync.replicas": "2", "unclean.leader.election.enable": "false", "replication.factor": "3",
		"flush.messages": "9223372036854775807", "flush.ms": "9223372036854775807"}
	run := func(flush string) verdict.Result {
		tg := embedded(t, nats.Client{}) // the run's broker; BR-6.1 reads only the view
		tg.Declared = d
		view := kafkaView{topic: map[string]string{}}
		for k, v := range topic {
			view.topic[k] = v
		}
		view.topic["flush.messages"] = flush
		tg.Inspect = func(context.Context) (mq.Inspector, error) { return view, nil }
		return register(tg, "BR-6.1")["BR-6.1"]
	}
	if r := run("9223372036854775807"); r.Verdict != verdict.Pass {
		t.Errorf("flush as declared (the default): BR-6.1 %s (%s)", r.Verdict, r.Reason)
	}
	if r := run("10000"); r.Verdict != verdict.Fail || !strings.Contains(r.Reason, "topic orders flush.messages: declared 9223372036854775807, server 10000") {
		t.Errorf("flush.messages 10000 on the cluster: BR-6.1 %s (%s)", r.Verdict, r.Reason)
	}
}
