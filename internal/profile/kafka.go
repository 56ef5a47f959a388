package profile

import (
	"fmt"
	"strings"
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
	Partitions    int           `yaml:"partitions" json:"partitions,omitempty"`
	CleanupPolicy CleanupPolicy `yaml:"cleanupPolicy" json:"cleanupPolicy,omitempty"` // absent: delete
	// MinInsyncReplicas (absent: 1, Kafka's default; checked as a written 1).
	MinInsyncReplicas     int  `yaml:"minInsyncReplicas" json:"minInsyncReplicas,omitempty"`
	UncleanLeaderElection bool `yaml:"uncleanLeaderElection" json:"uncleanLeaderElection"`
	// RetentionBytes is retention.bytes per partition (absent: -1, no
	// size limit, Kafka's default).
	RetentionBytes int `yaml:"retentionBytes" json:"retentionBytes,omitempty"`
	// MaxMessageBytes is max.message.bytes, the largest record batch the
	// topic takes (absent: 1048588, Kafka's default).
	MaxMessageBytes int `yaml:"maxMessageBytes" json:"maxMessageBytes,omitempty"`
	// FlushMessages is flush.messages, the records after which the log
	// is fsynced (absent: Long.MAX, never: the OS flushes; 1: every
	// record before the answer). FlushMs is flush.ms, the same in
	// milliseconds (absent: Long.MAX). durability.go.
	FlushMessages int `yaml:"flushMessages" json:"flushMessages,omitempty"`
	FlushMs       int `yaml:"flushMs" json:"flushMs,omitempty"`
}

// MinISR is the topic's min.insync.replicas, the default where undeclared.
func (t *KafkaTopic) MinISR() (int, bool) {
	if t == nil || t.MinInsyncReplicas == 0 {
		return KafkaDefaultMinISR, false
	}
	return t.MinInsyncReplicas, true
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
	// Retries is the client's retries (absent: 2147483647, bounded by the
	// delivery timeout); 0 conflicts with idempotence.
	Retries *int `yaml:"retries" json:"retries,omitempty"`
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
	KafkaDefaultMinISR          = 1
	KafkaDefaultRetentionBytes  = -1      // no size limit
	KafkaDefaultMaxMessageBytes = 1048588 // 1 MiB plus the batch overhead
	// KafkaIdempotentMaxInFlight is the most in-flight requests an
	// idempotent producer keeps ordered and de-duped.
	KafkaIdempotentMaxInFlight = 5
)

// Horizon is how long after its first attempt the client itself may still
// retry one record: the delivery timeout. An application's re-send is not
// in it: it is a new record with a new sequence number, which the producer
// id's de-dupe never matches whatever the id's state (retry-past-window
// names those re-sends).
func (k *KafkaProducer) Horizon() (time.Duration, string) {
	if k != nil && k.DeliveryTimeout > 0 {
		return k.DeliveryTimeout.D(), fmt.Sprintf("delivery.timeout.ms %s", k.DeliveryTimeout)
	}
	return KafkaDefaultDeliveryTimeout, fmt.Sprintf("delivery.timeout.ms %s (the client default)", KafkaDefaultDeliveryTimeout)
}

// Idempotence is what the Java client makes of the declared settings
// (Kafka's documentation of enable.idempotence, and ProducerConfig's
// postProcessAndValidateIdempotenceConfigs since KAFKA-13673, Kafka 3.2,
// backported to 3.0.1 and 3.1.1): idempotence needs acks all, retries above
// 0 and at most 5 requests in flight. Left unset it defaults to true and is
// silently turned off by a conflicting setting; set to true with one, the
// client refuses to start, as it does a transactional.id without
// idempotence. on is whether the running producer is idempotent, field
// the setting that decides it ("" for the default), why the sentence, and
// refused the client's refusal ("" when it starts).
func (k *KafkaProducer) Idempotence() (on bool, field, why, refused string) {
	if k == nil {
		k = &KafkaProducer{}
	}
	var conflicts []string
	if acks := orDefault(string(k.Acks), string(AcksAll)); acks != string(AcksAll) {
		conflicts = append(conflicts, "acks="+acks)
		field = "acks"
	}
	if k.Retries != nil && *k.Retries == 0 {
		conflicts = append(conflicts, "retries 0")
		field = orDefault(field, "retries")
	}
	if k.MaxInFlight > KafkaIdempotentMaxInFlight {
		conflicts = append(conflicts, fmt.Sprintf("max.in.flight.requests.per.connection %d > %d", k.MaxInFlight, KafkaIdempotentMaxInFlight))
		field = orDefault(field, "maxInFlight")
	}
	c := strings.Join(conflicts, ", ")
	switch {
	case k.EnableIdempotence != nil && *k.EnableIdempotence && c != "":
		return false, field, "", fmt.Sprintf("enable.idempotence true with %s: the Kafka producer refuses to start (ConfigException: the idempotent producer needs acks all, retries above 0 and at most %d requests in flight)", c, KafkaIdempotentMaxInFlight)
	case k.EnableIdempotence != nil && !*k.EnableIdempotence:
		on, field, why = false, "enableIdempotence", "enable.idempotence false"
	case c != "":
		on, why = false, fmt.Sprintf("enable.idempotence not set and %s conflicts with it: the client silently disables idempotence (it is on by default only without a conflicting setting)", c)
	default:
		on, why = true, "enable.idempotence true"
		if k.EnableIdempotence == nil {
			why = "enable.idempotence not set: true, the client default since Kafka 3.0"
		}
	}
	if !on && k.TransactionalID != "" {
		return false, "transactionalId", "", fmt.Sprintf("transactional.id %s without idempotence (%s): the Kafka producer refuses to start (ConfigException: cannot set a transactional.id without also enabling idempotence)", k.TransactionalID, why)
	}
	return on, field, why, ""
}

func (f *finder) kafkaKind(i int, b *Broker) {
	for j := range b.Streams {
		s := &b.Streams[j]
		// An undeclared min.insync.replicas is Kafka's default, 1: the
		// same check as a written 1.
		mis, declared := s.Kafka.MinISR()
		if mis != 1 || s.Replicas < 2 {
			continue
		}
		how := "min.insync.replicas 1"
		if !declared {
			how = "min.insync.replicas not declared: 1, Kafka's default,"
		}
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		f.add("kafka-min-isr", fmt.Sprintf("kafka %s/%s", b.Name, s.Name), sp+".kafka.minInsyncReplicas",
			fmt.Sprintf("%s with replication factor %d: an acks=all produce is acked by the leader alone, and lost if the leader dies before a follower copies it", how, s.Replicas),
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
	// A refused configuration never reaches here: validateKinds refuses it.
	idem, field, why, _ := k.Idempotence()
	if !idem {
		f.add("kafka-no-idempotence", subject, pp+".kafka."+orDefault(field, "enableIdempotence"),
			why+": a retry of a produce whose answer was lost is written a second time",
			[]string{why + ": the broker keeps no producer id and sequence number for it, so it cannot tell the client's retry from a new record"},
			Mark{Label: "t0", Text: "produce r1: written, the answer lost"},
			Mark{Label: "t1", Text: "the client retries r1: written again (two records)"})
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
	if h, how := k.Horizon(); idem && h > exp {
		f.add("kafka-pid-expiry", subject, pp+".kafka.deliveryTimeout",
			fmt.Sprintf("the client may retry a record %s after its first attempt, but the broker forgets an idle producer id after %s: that retry is not de-duplicated", h, exp),
			[]string{fmt.Sprintf("client retry horizon %s (%s) > %s: the producer's id and sequence are expired when the retry arrives", h, how, expHow),
				"this is the client's own retries only: an application re-send is a new record with a new sequence number, written again whatever the producer id's state"},
			Mark{Text: "produce r1: written, the answer lost; the producer goes idle"},
			Mark{At: Duration(exp), Text: "the broker expires the producer id"},
			Mark{At: Duration(h), Text: "the client's retry of r1: a producer id the broker no longer knows, written again"})
	}
}
