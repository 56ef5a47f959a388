package profile

// Kafka share groups (KIP-932, "Queues for Kafka"): the settings a team
// declares and the hazards they carry. The names are Kafka's: the
// cluster's group.share.record.lock.duration.ms and
// group.share.delivery.count.limit (broker configs, defaults 30 s and 5),
// a group's share.record.lock.duration.ms and share.delivery.count.limit
// (group configs, KIP-1240) and errors.deadletterqueue.topic.name (a group
// config from Kafka 4.4, KIP-1191; blank: no dead-letter topic). Sources:
// https://cwiki.apache.org/confluence/display/KAFKA/KIP-932%3A+Queues+for+Kafka,
// https://kafka.apache.org/44/configuration/group-configs/.

import (
	"fmt"
	"time"
)

// KafkaShareBroker is the cluster's share-group defaults (broker configs;
// BR-6.1 reads them back with DescribeConfigs of a broker).
type KafkaShareBroker struct {
	// RecordLockDuration is group.share.record.lock.duration.ms (absent:
	// Kafka's default, 30s): how long a member holds a record it acquired.
	RecordLockDuration Duration `yaml:"recordLockDuration" json:"recordLockDuration,omitempty"`
	// DeliveryCountLimit is group.share.delivery.count.limit (absent:
	// Kafka's default, 5): the delivery at which a record is archived.
	DeliveryCountLimit int `yaml:"deliveryCountLimit" json:"deliveryCountLimit,omitempty"`
}

// KafkaShareGroup makes a broker consumer of a Kafka topic a share group;
// its group config (DescribeConfigs of the group) overrides the cluster's.
type KafkaShareGroup struct {
	// RecordLockDuration is share.record.lock.duration.ms (absent: the
	// cluster's).
	RecordLockDuration Duration `yaml:"recordLockDuration" json:"recordLockDuration,omitempty"`
	// DeliveryCountLimit is share.delivery.count.limit (absent: the
	// cluster's).
	DeliveryCountLimit int `yaml:"deliveryCountLimit" json:"deliveryCountLimit,omitempty"`
	// DeadLetterTopic is errors.deadletterqueue.topic.name (Kafka 4.4+;
	// absent: none, an archived record is gone for the group).
	DeadLetterTopic string `yaml:"deadLetterTopic" json:"deadLetterTopic,omitempty"`
	// RenewsLock: the application's members RENEW a record's lock while
	// they process it (KIP-1222, Kafka 4.2).
	RenewsLock bool `yaml:"renewsLock" json:"renewsLock"`
	// Retries are the times after the first delivery at which the
	// application expects a record whose effect failed to come back
	// (it holds the record, or lets its lock run out, between them).
	Retries []Duration `yaml:"retries" json:"retries,omitempty"`
}

// Kafka's share-group defaults and bounds.
const (
	KafkaShareDefaultLock  = 30 * time.Second
	KafkaShareDefaultLimit = 5
	// KafkaShareMinLimit and KafkaShareMaxLimit bound the delivery count
	// limit (group.share.min/max.delivery.count.limit's defaults).
	KafkaShareMinLimit = 2
	KafkaShareMaxLimit = 10
)

// ShareSettings is what a share group runs with: its group config, else the
// cluster's, else Kafka's default; each with where it comes from.
type ShareSettings struct {
	Lock             time.Duration
	LockHow          string
	Limit            int
	LimitHow         string
	LockField        string // the profile field the lock comes from ("" for the default)
	LimitField       string
	DeadLetterTopic  string
	Renews           bool
	Retries          []Duration
	RetriesField     string
	GroupField       string // the kafkaShare block
	BrokerName       string
	StreamName, Name string
}

// Share returns the settings of the broker consumer bc of stream s on
// broker b (its kafkaShare block), with bp its path in the profile.
func Share(b *Broker, s *Stream, bc *BrokerConsumer, bp string) ShareSettings {
	g := bc.KafkaShare
	out := ShareSettings{Lock: KafkaShareDefaultLock, LockHow: "Kafka's default", Limit: KafkaShareDefaultLimit, LimitHow: "Kafka's default",
		GroupField: bp + ".kafkaShare", BrokerName: b.Name, StreamName: s.Name, Name: bc.Name}
	out.LockField, out.LimitField = out.GroupField, out.GroupField
	if c := b.KafkaShare; c != nil {
		if c.RecordLockDuration > 0 {
			out.Lock, out.LockHow = c.RecordLockDuration.D(), "the cluster's group.share.record.lock.duration.ms"
		}
		if c.DeliveryCountLimit > 0 {
			out.Limit, out.LimitHow = c.DeliveryCountLimit, "the cluster's group.share.delivery.count.limit"
		}
	}
	if g == nil {
		return out
	}
	if g.RecordLockDuration > 0 {
		out.Lock, out.LockHow, out.LockField = g.RecordLockDuration.D(), "the group's share.record.lock.duration.ms", out.GroupField+".recordLockDuration"
	}
	if g.DeliveryCountLimit > 0 {
		out.Limit, out.LimitHow, out.LimitField = g.DeliveryCountLimit, "the group's share.delivery.count.limit", out.GroupField+".deliveryCountLimit"
	}
	out.DeadLetterTopic, out.Renews, out.Retries = g.DeadLetterTopic, g.RenewsLock, g.Retries
	out.RetriesField = out.GroupField + ".retries"
	return out
}

// shareChecks are the share-group hazard checks.
var shareChecks = []Check{
	{"share-lock-under-processing", "BR-9.3", "a Kafka share group's record lock is shorter than the declared processing time: every slow record is delivered again while it is processed"},
	{"share-limit-before-retries", "BR-9.1", "a Kafka share group's delivery count limit archives a failing record before the application's retries end"},
	{"share-archive-no-dlq", "BR-9.2", "a Kafka share group archives a record at its delivery count limit with no dead-letter topic: gone for the group"},
}

// validateKafkaShare refuses share-group settings Kafka would refuse, or on
// a broker that is not Kafka.
func (p *Profile) validateKafkaShare() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	limit := func(path string, n int) error {
		if n != 0 && (n < KafkaShareMinLimit || n > KafkaShareMaxLimit) {
			return bad(path, "%d: Kafka takes a delivery count limit of %d to %d", n, KafkaShareMinLimit, KafkaShareMaxLimit)
		}
		return nil
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if b.KafkaShare != nil {
			if b.Kind != KindKafka {
				return bad(bp+".kafkaShare", "share groups are Kafka's (KIP-932), not %s", b.Kind)
			}
			if err := limit(bp+".kafkaShare.deliveryCountLimit", b.KafkaShare.DeliveryCountLimit); err != nil {
				return err
			}
		}
		for j, s := range b.Streams {
			for k, c := range s.Consumers {
				g := c.KafkaShare
				if g == nil {
					continue
				}
				cp := fmt.Sprintf("%s.streams[%d].consumers[%d].kafkaShare", bp, j, k)
				if b.Kind != KindKafka {
					return bad(cp, "share groups are Kafka's (KIP-932), not %s", b.Kind)
				}
				if c.MaxDeliver != 0 || c.AckWait != 0 {
					return bad(cp, "a share group's ack wait and max-deliver are its recordLockDuration and deliveryCountLimit; leave ackWait and maxDeliver out")
				}
				if err := limit(cp+".deliveryCountLimit", g.DeliveryCountLimit); err != nil {
					return err
				}
				for r, d := range g.Retries {
					if d == 0 || (r > 0 && d <= g.Retries[r-1]) {
						return bad(fmt.Sprintf("%s.retries[%d]", cp, r), "retry times are after the first delivery and ascending: %s", d)
					}
				}
			}
		}
	}
	return nil
}

// kafkaShare runs the share-group checks.
func (f *finder) kafkaShare() {
	for i := range f.p.Brokers {
		b := &f.p.Brokers[i]
		if b.Kind != KindKafka {
			continue
		}
		for j := range b.Streams {
			s := &b.Streams[j]
			for k := range s.Consumers {
				bc := &s.Consumers[k]
				if bc.KafkaShare == nil {
					continue
				}
				ss := Share(b, s, bc, fmt.Sprintf("brokers[%d].streams[%d].consumers[%d]", i, j, k))
				f.shareRetries(ss)
				f.shareNoDLQ(ss)
			}
		}
	}
	for ci := range f.p.Consumers {
		c := &f.p.Consumers[ci]
		b, s := f.p.stream(c.Broker, c.Stream)
		if b == nil || s == nil || b.Kind != KindKafka {
			continue
		}
		bc := s.consumer(c.BrokerConsumer)
		if bc == nil || bc.KafkaShare == nil {
			continue
		}
		j, k := indexOf(b.Streams, s), indexOfConsumer(s.Consumers, bc)
		ss := Share(b, s, bc, fmt.Sprintf("brokers[%d].streams[%d].consumers[%d]", indexOfBroker(f.p.Brokers, b), j, k))
		f.shareLock(ci, c, ss)
	}
}

func (ss ShareSettings) subject() string {
	return fmt.Sprintf("share group %s (kafka %s/%s)", ss.Name, ss.BrokerName, ss.StreamName)
}

// SlowDeliveries is how many times a record whose every delivery takes
// processing is delivered under a lock shorter than that: its lock ends
// before each ACCEPT, so none is accepted, and it comes back every lock
// until the limit archives it; inFlight is how many of those deliveries
// start before the first one's processing ends.
func SlowDeliveries(lock, processing time.Duration, limit int) (deliveries, inFlight int) {
	inFlight = int((processing + lock - 1) / lock)
	return limit, min(inFlight, limit)
}

func (f *finder) shareLock(ci int, c *Consumer, ss ShareSettings) {
	p := c.ProcessingTime.D()
	if p == 0 || p <= ss.Lock || ss.Renews {
		return
	}
	all, inFlight := SlowDeliveries(ss.Lock, p, ss.Limit)
	const n = 100
	f.add("share-lock-under-processing", fmt.Sprintf("consumer %s on %s", c.Name, ss.subject()), fmt.Sprintf("consumers[%d].processingTime", ci),
		fmt.Sprintf("a record takes up to %s to process but its lock is %s: the lock ends before the ACCEPT, and the record goes to another member while the first still works on it", p, ss.Lock),
		[]string{
			fmt.Sprintf("lock %s (%s) < processing %s: the lock ends %s before the ACCEPT, which the broker then refuses", ss.Lock, ss.LockHow, p, p-ss.Lock),
			fmt.Sprintf("the record comes back every %s: ceil(%s / %s) = %d deliveries start before the first member finishes, each processed in full", ss.Lock, p, ss.Lock, inFlight),
			fmt.Sprintf("no delivery can be accepted in time, so it is delivered %d times (delivery count limit, %s) and then archived: per %d such records, %d deliveries, up to %d effects, %d records archived", all, ss.LimitHow, n, n*all, n*all, n),
			"RENEW (KIP-1222, Kafka 4.2) while processing, or a lock above the processing time, keeps one delivery per record (renewsLock: true)",
		},
		Mark{Text: "member A acquires the record and starts its effect"},
		Mark{At: Duration(ss.Lock), Text: "the lock ends: member B acquires it (delivery 2) and starts the same effect"},
		Mark{At: Duration(p), Text: "A's effect is done; its ACCEPT is refused (its lock is gone): the effect happened twice"})
}

// ShareRetryDeliveries is how many deliveries a record takes to reach the
// last of retries when the application holds it between them: one, plus a
// delivery for each lock that ends in a gap (the lock hands it back every
// lock; the application's next try is on the last of those).
func ShareRetryDeliveries(lock time.Duration, retries []Duration) int {
	n, prev := 1, time.Duration(0)
	for _, r := range retries {
		gap := r.D() - prev
		n += int((gap + lock - 1) / lock)
		prev = r.D()
	}
	return n
}

func (f *finder) shareRetries(ss ShareSettings) {
	if len(ss.Retries) == 0 {
		return
	}
	need := ShareRetryDeliveries(ss.Lock, ss.Retries)
	if need <= ss.Limit {
		return
	}
	last := ss.Retries[len(ss.Retries)-1]
	f.add("share-limit-before-retries", ss.subject(), fmt.Sprintf("%s[%d]", ss.RetriesField, len(ss.Retries)-1),
		fmt.Sprintf("the application retries a failing record until %s after its first delivery, which takes %d deliveries; the group archives it at delivery %d", last, need, ss.Limit),
		[]string{
			fmt.Sprintf("%d retries, the last at %s, with a lock of %s (%s): 1 + the sum over the gaps of ceil(gap / lock) = %d deliveries (each lock that ends in a gap hands the record back and counts one)", len(ss.Retries), last, ss.Lock, ss.LockHow, need),
			fmt.Sprintf("%d > %d (%s): the record is archived after delivery %d, before the retries end", need, ss.Limit, ss.LimitHow, ss.Limit),
		},
		Mark{Text: "delivery 1: the effect fails"},
		Mark{At: Duration(time.Duration(ss.Limit-1) * min(ss.Lock, last.D())), Label: fmt.Sprintf("delivery %d", ss.Limit), Text: "the effect fails again: the record is archived"},
		Mark{At: last, Text: "the application's last retry: nothing comes back"})
}

func (f *finder) shareNoDLQ(ss ShareSettings) {
	if ss.DeadLetterTopic != "" {
		return
	}
	f.add("share-archive-no-dlq", ss.subject(), ss.GroupField,
		fmt.Sprintf("a record is archived at delivery %d with no dead-letter topic: gone for the group, though still in the log", ss.Limit),
		[]string{
			fmt.Sprintf("delivery count limit %d (%s): a record whose effect fails %d times in a row, or whose lock ends %d times, is archived", ss.Limit, ss.LimitHow, ss.Limit, ss.Limit),
			"errors.deadletterqueue.topic.name is blank (absent, or Kafka before 4.4, KIP-1191): nothing copies the archived record anywhere; the group never reads it again (a loss for its effects)",
		},
		Mark{Label: "delivery 1", Text: "the effect fails; RELEASE"},
		Mark{At: Duration(time.Duration(ss.Limit-1) * ss.Lock), Label: fmt.Sprintf("delivery %d", ss.Limit), Text: "the effect fails again: the record is archived; the share-partition start offset passes it"})
}

func indexOfBroker(bs []Broker, b *Broker) int {
	for i := range bs {
		if &bs[i] == b {
			return i
		}
	}
	return -1
}

func indexOf(ss []Stream, s *Stream) int {
	for i := range ss {
		if &ss[i] == s {
			return i
		}
	}
	return -1
}

func indexOfConsumer(cs []BrokerConsumer, c *BrokerConsumer) int {
	for i := range cs {
		if &cs[i] == c {
			return i
		}
	}
	return -1
}

// everyCheck is every check in the report's order: allChecks, then the
// share-group checks.
func everyCheck() []Check { return append(allChecks(), shareChecks...) }

// ShareChecks are the share-group hazard checks.
func ShareChecks() []Check { return append([]Check(nil), shareChecks...) }

// shareLine is a share group in the plan's declared pipeline.
func shareLine(b *Broker, s *Stream, bc *BrokerConsumer) string {
	ss := Share(b, s, bc, "")
	dlq := "none (archived records are gone for the group)"
	if ss.DeadLetterTopic != "" {
		dlq = ss.DeadLetterTopic
	}
	return fmt.Sprintf("  share group %s: record lock %s (%s), delivery count limit %d (%s), dead-letter topic %s, renews its locks: %t",
		bc.Name, ss.Lock, ss.LockHow, ss.Limit, ss.LimitHow, dlq, ss.Renews)
}

// shareAck is what a share group member's acknowledgement is and proves.
func shareAck(b *Broker, s *Stream, bc *BrokerConsumer) (ack, proves string) {
	ss := Share(b, s, bc, "")
	return "ACCEPT (share acknowledgement)", fmt.Sprintf("the group will not deliver the record again (otherwise: again after the %s lock or at once after a RELEASE, up to %d deliveries, then archived)", ss.Lock, ss.Limit)
}
