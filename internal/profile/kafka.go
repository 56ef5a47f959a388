package profile

import (
	"fmt"
	"time"
)

// KafkaBroker is what a team relies on of its Kafka cluster's broker
// settings (DescribeConfigs of a broker reads them back, BR-6.1).
type KafkaBroker struct {
	// ProducerIDExpiration is producer.id.expiration.ms: after it an idle
	// producer id is forgotten, and a retry from it is no longer de-duped
	// (absent: Kafka's default, 24h).
	ProducerIDExpiration Duration `yaml:"producerIdExpiration" json:"producerIdExpiration,omitempty"`
	// TransactionalIDExpiration is transactional.id.expiration.ms (absent:
	// Kafka's default, 7 days).
	TransactionalIDExpiration Duration `yaml:"transactionalIdExpiration" json:"transactionalIdExpiration,omitempty"`
}

// KafkaTopic is a topic's settings beyond the stream's replicas (the
// replication factor) and maxAge (retention.ms).
type KafkaTopic struct {
	Partitions            int           `yaml:"partitions" json:"partitions,omitempty"`
	CleanupPolicy         CleanupPolicy `yaml:"cleanupPolicy" json:"cleanupPolicy,omitempty"` // absent: delete
	MinInsyncReplicas     int           `yaml:"minInsyncReplicas" json:"minInsyncReplicas,omitempty"`
	UncleanLeaderElection bool          `yaml:"uncleanLeaderElection" json:"uncleanLeaderElection"`
}

// CleanupPolicy is a topic's cleanup.policy.
type CleanupPolicy string

const (
	CleanupDelete        CleanupPolicy = "delete"
	CleanupCompact       CleanupPolicy = "compact"
	CleanupCompactDelete CleanupPolicy = "compact,delete"
)

// KafkaProducer is a producer's client settings.
type KafkaProducer struct {
	// EnableIdempotence (absent: true, the client default since Kafka 3.0).
	EnableIdempotence *bool `yaml:"enableIdempotence" json:"enableIdempotence,omitempty"`
	// Acks (absent: all).
	Acks KafkaAcks `yaml:"acks" json:"acks,omitempty"`
	// MaxInFlight is max.in.flight.requests.per.connection (absent: 5).
	MaxInFlight int `yaml:"maxInFlight" json:"maxInFlight,omitempty"`
	// Retries (absent: unbounded within the delivery timeout).
	Retries int `yaml:"retries" json:"retries,omitempty"`
	// DeliveryTimeout is delivery.timeout.ms (absent: 2m).
	DeliveryTimeout Duration `yaml:"deliveryTimeout" json:"deliveryTimeout,omitempty"`
	TransactionalID string   `yaml:"transactionalId" json:"transactionalId,omitempty"`
}

// KafkaAcks is a Kafka producer's acks.
type KafkaAcks string

const (
	AcksAll    KafkaAcks = "all"
	AcksLeader KafkaAcks = "1"
	AcksNone   KafkaAcks = "0"
)

// Kafka defaults of what a profile leaves out.
const (
	KafkaDefaultPIDExpiration   = 24 * time.Hour
	KafkaDefaultTxnIDExpiration = 7 * 24 * time.Hour
	KafkaDefaultDeliveryTimeout = 2 * time.Minute
	KafkaDefaultMaxInFlight     = 5
	// KafkaIdempotentMaxInFlight is the most in-flight requests an
	// idempotent producer keeps ordered and de-duped.
	KafkaIdempotentMaxInFlight = 5
)

// Horizon is how long after its first attempt a producer may still retry
// one record: the delivery timeout, or the last declared retry if later.
func (k *KafkaProducer) Horizon(retries []Duration) (time.Duration, string) {
	d := KafkaDefaultDeliveryTimeout
	how := fmt.Sprintf("delivery.timeout.ms %s (the client default)", d)
	if k != nil && k.DeliveryTimeout > 0 {
		d, how = k.DeliveryTimeout.D(), fmt.Sprintf("delivery.timeout.ms %s", k.DeliveryTimeout)
	}
	if n := len(retries); n > 0 && retries[n-1].D() > d {
		d, how = retries[n-1].D(), fmt.Sprintf("the last declared retry at %s", retries[n-1])
	}
	return d, how
}

func (f *finder) kafkaKind(i int, b *Broker) {
	for j := range b.Streams {
		s := &b.Streams[j]
		k := s.Kafka
		if k == nil || k.MinInsyncReplicas != 1 || s.Replicas < 2 {
			continue
		}
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		f.add("kafka-min-isr", fmt.Sprintf("kafka %s/%s", b.Name, s.Name), sp+".kafka.minInsyncReplicas",
			fmt.Sprintf("min.insync.replicas 1 with replication factor %d: an acks=all produce is acked by the leader alone, and lost if the leader dies before a follower copies it", s.Replicas),
			[]string{fmt.Sprintf("replication factor %d, min.insync.replicas 1: the ISR may shrink to the leader; acks=all then waits for 1 copy; %d keeps a second copy of every acked record", s.Replicas, min(2, s.Replicas))},
			Mark{Label: "t0", Text: "followers fall out of the ISR; the leader alone acks the produce"},
			Mark{Label: "t1", Text: "the leader dies; a follower without the record becomes leader: the acked record is gone"})
	}
	for ci, c := range f.p.Consumers {
		if c.Broker != b.Name {
			continue
		}
		_, s := f.p.stream(c.Broker, c.Stream)
		if c.MaxReplayAge == nil || c.MaxReplayAge.D() == 0 || s.MaxAge == 0 || s.MaxAge.D() >= c.MaxReplayAge.D() {
			continue
		}
		f.add("kafka-retention-replay", fmt.Sprintf("consumer %s (kafka %s/%s)", c.Name, b.Name, s.Name), fmt.Sprintf("consumers[%d].maxReplayAge", ci),
			fmt.Sprintf("a replay may reach %s back, but the topic keeps records %s: a reset to an older offset finds them deleted", c.MaxReplayAge, s.MaxAge),
			[]string{fmt.Sprintf("retention.ms %s (maxAge) < maxReplayAge %s: records older than %s are deleted by the log cleaner", s.MaxAge, c.MaxReplayAge, s.MaxAge)},
			Mark{Text: "record published"},
			Mark{At: s.MaxAge, Text: "retention deletes it"},
			Mark{At: *c.MaxReplayAge, Text: "an operator resets the group to replay: the record is not there"})
	}
}

func (f *finder) kafkaProducer(i int, pr *Producer) {
	b, s := f.p.stream(pr.Broker, pr.Stream)
	if b.Kind != KindKafka {
		return
	}
	k := pr.Kafka
	if k == nil {
		k = &KafkaProducer{}
	}
	pp := fmt.Sprintf("producers[%d]", i)
	subject := fmt.Sprintf("producer %s -> kafka %s/%s", pr.Name, b.Name, s.Name)
	idem := k.EnableIdempotence == nil || *k.EnableIdempotence
	inflight := k.MaxInFlight
	if inflight == 0 {
		inflight = KafkaDefaultMaxInFlight
	}
	switch {
	case !idem:
		f.add("kafka-no-idempotence", subject, pp+".kafka.enableIdempotence",
			"enable.idempotence false: a retry of a produce whose answer was lost is written a second time",
			[]string{"enable.idempotence false: the broker keeps no producer id and sequence number, so it cannot tell a retry from a new record"},
			Mark{Label: "t0", Text: "produce r1: written, the answer lost"},
			Mark{Label: "t1", Text: "the client retries r1: written again (two records)"})
	case inflight > KafkaIdempotentMaxInFlight:
		f.add("kafka-no-idempotence", subject, pp+".kafka.maxInFlight",
			fmt.Sprintf("max.in.flight.requests.per.connection %d > %d: the idempotent producer refuses it or, in older clients, silently disables idempotence", inflight, KafkaIdempotentMaxInFlight),
			[]string{fmt.Sprintf("%d in flight > %d: the broker keeps the sequence numbers of the last %d batches per partition only, so a retry of an older batch is not recognized", inflight, KafkaIdempotentMaxInFlight, KafkaIdempotentMaxInFlight)},
			Mark{Label: "t0", Text: fmt.Sprintf("%d batches in flight; batch 1's answer lost", inflight)},
			Mark{Label: "t1", Text: "batch 1 retried after 5 later batches: outside the window, written again"})
	}
	if acks := orDefault(string(k.Acks), string(AcksAll)); acks != string(AcksAll) {
		f.add("kafka-acks", subject, pp+".kafka.acks",
			fmt.Sprintf("acks=%s: the produce is acknowledged before the in-sync replicas have the record", acks),
			[]string{map[string]string{"1": "acks=1: the leader's own write acks it; a leader that dies before a follower fetches it loses an acked record", "0": "acks=0: nothing acks it; a lost request is never known"}[acks]},
			Mark{Label: "t0", Text: "the leader writes r1 and acks (acks=" + acks + ")"},
			Mark{Label: "t1", Text: "the leader dies before the followers copy r1: r1 is lost, acked"})
	}
	exp := KafkaDefaultPIDExpiration
	expHow := fmt.Sprintf("producer.id.expiration.ms %s (the broker default)", exp)
	if b.Kafka != nil && b.Kafka.ProducerIDExpiration > 0 {
		exp, expHow = b.Kafka.ProducerIDExpiration.D(), fmt.Sprintf("producer.id.expiration.ms %s", b.Kafka.ProducerIDExpiration)
	}
	if h, how := k.Horizon(pr.Retries); idem && h > exp {
		field := pp + ".kafka.deliveryTimeout"
		if n := len(pr.Retries); n > 0 && pr.Retries[n-1].D() == h {
			field = fmt.Sprintf("%s.retries[%d]", pp, n-1)
		}
		f.add("kafka-pid-expiry", subject, field,
			fmt.Sprintf("a retry may come %s after the first attempt, but the broker forgets an idle producer id after %s: that retry is not de-duplicated", h, exp),
			[]string{fmt.Sprintf("retry horizon %s (%s) > %s: the producer's id and sequence are expired when the retry arrives", h, how, expHow)},
			Mark{Text: "produce r1: written, the answer lost; the producer goes idle"},
			Mark{At: Duration(exp), Text: "the broker expires the producer id"},
			Mark{At: Duration(h), Text: "retry of r1: a producer id the broker no longer knows, written again"})
	}
}
