package profile

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RabbitMQServer is what a team relies on of its RabbitMQ node: the
// version the defaults below depend on, and the node-wide
// consumer_timeout (the management API or the node's configuration shows
// it; BR-6.1 compares it where the server tells).
type RabbitMQServer struct {
	// Version is the server's version ("3.13", "4.0.5"): a quorum queue's
	// delivery limit defaults to none before 4.0 and to 20 from 4.0.
	// Absent: before 4.0.
	Version string `yaml:"version" json:"version,omitempty"`
	// ConsumerTimeout is consumer_timeout: a delivery unacked that long
	// closes its channel and every unacked delivery on it is requeued
	// (absent: RabbitMQ's default, 30 min).
	ConsumerTimeout Duration `yaml:"consumerTimeout" json:"consumerTimeout,omitempty"`
}

// RabbitMQQueue is a queue's arguments (x-...), as declared or set by a
// policy: the effective value is compared on the server (BR-6.1).
type RabbitMQQueue struct {
	// Type is x-queue-type (absent: classic).
	Type QueueType `yaml:"type" json:"type,omitempty"`
	// DeliveryLimit is x-delivery-limit of a quorum queue: a message
	// returned more often is dead-lettered, or dropped without a
	// dead-letter exchange (absent: none before 4.0, 20 from 4.0; -1:
	// unlimited).
	DeliveryLimit int `yaml:"deliveryLimit" json:"deliveryLimit,omitempty"`
	// DeadLetterExchange is x-dead-letter-exchange (absent: none).
	DeadLetterExchange string `yaml:"deadLetterExchange" json:"deadLetterExchange,omitempty"`
	// DeadLetterStrategy is x-dead-letter-strategy of a quorum queue
	// (absent: at-most-once).
	DeadLetterStrategy DeadLetterStrategy `yaml:"deadLetterStrategy" json:"deadLetterStrategy,omitempty"`
	// MessageTTL is x-message-ttl: a message older is removed from the
	// queue (absent: none).
	MessageTTL Duration `yaml:"messageTtl" json:"messageTtl,omitempty"`
	// MaxLength is x-max-length in messages (absent: none).
	MaxLength int `yaml:"maxLength" json:"maxLength,omitempty"`
	// Overflow is x-overflow at max length (absent: drop-head).
	Overflow Overflow `yaml:"overflow" json:"overflow,omitempty"`
	// Expires is x-expires: the queue itself is deleted after it is
	// unused that long (absent: never).
	Expires Duration `yaml:"expires" json:"expires,omitempty"`
	// Policy names the policy the team expects to apply to the queue
	// (absent: none is expected).
	Policy string `yaml:"policy" json:"policy,omitempty"`
}

// QueueType is x-queue-type.
type QueueType string

const (
	QueueClassic QueueType = "classic"
	QueueQuorum  QueueType = "quorum"
	QueueStream  QueueType = "stream"
)

// DeadLetterStrategy is x-dead-letter-strategy.
type DeadLetterStrategy string

const (
	DLAtMostOnce  DeadLetterStrategy = "at-most-once"
	DLAtLeastOnce DeadLetterStrategy = "at-least-once"
)

// Overflow is x-overflow.
type Overflow string

const (
	OverflowDropHead         Overflow = "drop-head"
	OverflowRejectPublish    Overflow = "reject-publish"
	OverflowRejectPublishDLX Overflow = "reject-publish-dlx"
)

// RabbitMQConsumer is how the application's channel consumes a queue.
type RabbitMQConsumer struct {
	// Prefetch is basic.qos prefetch_count (absent: 0, unlimited).
	Prefetch int `yaml:"prefetch" json:"prefetch,omitempty"`
	// AckMode is manual (basic.consume no-ack false, the protocol default)
	// or auto (acked when sent).
	AckMode AckMode `yaml:"ackMode" json:"ackMode,omitempty"`
}

// AckMode is a RabbitMQ consumer's acknowledgement mode.
type AckMode string

const (
	AckManual AckMode = "manual"
	AckAuto   AckMode = "auto"
)

// RabbitMQProducer is a publisher's channel settings.
type RabbitMQProducer struct {
	// Confirms: the channel is in confirm mode and a publish counts once
	// its basic.ack came (absent: false, a channel's default).
	Confirms bool `yaml:"confirms" json:"confirms"`
	// Mandatory: an unroutable publish comes back (basic.return) instead
	// of being dropped (absent: false).
	Mandatory bool `yaml:"mandatory" json:"mandatory"`
	// ProducerName is the stream producer's name (de-dupe by name and
	// publishing id; one writer per name).
	ProducerName string `yaml:"producerName" json:"producerName,omitempty"`
	// Rate and Burst are the peak publish rate (messages per second) and
	// how long it lasts: with the consumers' processing they give the
	// backlog a queue's TTL or max length must hold.
	Rate  int      `yaml:"rate" json:"rate,omitempty"`
	Burst Duration `yaml:"burst" json:"burst,omitempty"`
}

// RabbitMQ defaults of what a profile leaves out.
const (
	// RabbitMQDefaultConsumerTimeout is consumer_timeout's default.
	RabbitMQDefaultConsumerTimeout = 30 * time.Minute
	// RabbitMQDefaultDeliveryLimit4 is a quorum queue's delivery limit
	// from RabbitMQ 4.0 when none is set.
	RabbitMQDefaultDeliveryLimit4 = 20
)

// major is the major version of v ("3.10.8" -> 3); 0 when unreadable.
func major(v string) int {
	n, _ := strconv.Atoi(strings.SplitN(strings.TrimSpace(v), ".", 2)[0])
	return n
}

// EffectiveDeliveryLimit is a queue's delivery limit on a server of
// version v and how it was found: the declared one, else the version's
// default. 0: no limit.
func (q *RabbitMQQueue) EffectiveDeliveryLimit(v string) (int, string) {
	if q == nil || q.Type != QueueQuorum {
		return 0, "only a quorum queue has a delivery limit"
	}
	switch {
	case q.DeliveryLimit > 0:
		return q.DeliveryLimit, fmt.Sprintf("x-delivery-limit %d", q.DeliveryLimit)
	case q.DeliveryLimit < 0:
		return 0, "x-delivery-limit unlimited (-1)"
	case major(v) >= 4:
		return RabbitMQDefaultDeliveryLimit4, fmt.Sprintf("x-delivery-limit not declared: %d, the default from RabbitMQ 4.0 (version %s)", RabbitMQDefaultDeliveryLimit4, v)
	}
	return 0, fmt.Sprintf("x-delivery-limit not declared: none before RabbitMQ 4.0 (version %s)", orDefault(v, "not declared"))
}

// ConsumerTimeoutOf is the node's consumer_timeout as declared or its
// default.
func (r *RabbitMQServer) ConsumerTimeoutOf() (time.Duration, string) {
	if r != nil && r.ConsumerTimeout > 0 {
		return r.ConsumerTimeout.D(), "consumer_timeout " + r.ConsumerTimeout.String()
	}
	return RabbitMQDefaultConsumerTimeout, "consumer_timeout " + RabbitMQDefaultConsumerTimeout.String() + " (the default)"
}

// rabbitChecks are the RabbitMQ hazard checks; they follow kindChecks.
var rabbitChecks = []Check{
	{"rabbitmq-delivery-limit-drops", "BR-7.3", "a quorum queue's delivery limit without a dead-letter exchange drops the message"},
	{"rabbitmq-consumer-timeout", "BR-7.4", "processing longer than consumer_timeout closes the channel and redelivers"},
	{"rabbitmq-auto-ack", "CO-2.2", "an auto-ack consumer: a delivery lost in the consumer is silent"},
	{"rabbitmq-no-confirms", "BR-7.2", "a publisher without confirms: a lost publish is silent"},
	{"rabbitmq-no-mandatory", "BR-7.1", "a publisher without mandatory: an unroutable publish is dropped and confirmed"},
	{"rabbitmq-ttl-backlog", "BR-2.9", "a message TTL shorter than the backlog's wait drops messages"},
	{"rabbitmq-maxlen-backlog", "BR-2.9", "a max-length with drop-head smaller than the backlog drops messages"},
	{"rabbitmq-stream-writers", "BR-7.5", "two writers under one stream producer name"},
}

// RabbitChecks lists the RabbitMQ checks.
func RabbitChecks() []Check { return append([]Check(nil), rabbitChecks...) }

// validateRabbit refuses RabbitMQ settings elsewhere and what RabbitMQ
// itself refuses.
func (p *Profile) validateRabbit() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if b.RabbitMQ != nil && b.Kind != KindRabbitMQ {
			return bad(bp+".rabbitmq", "a rabbitmq block on a %s broker", b.Kind)
		}
		if r := b.RabbitMQ; r != nil {
			if r.Version != "" && major(r.Version) == 0 {
				return bad(bp+".rabbitmq.version", "%q: write the server's version as RabbitMQ prints it, e.g. 3.13.7 or 4.0", r.Version)
			}
			if r.ConsumerTimeout < 0 {
				return bad(bp+".rabbitmq.consumerTimeout", "must not be negative")
			}
		}
		for j, s := range b.Streams {
			sp := fmt.Sprintf("%s.streams[%d]", bp, j)
			if s.RabbitMQ != nil && b.Kind != KindRabbitMQ {
				return bad(sp+".rabbitmq", "a rabbitmq block on a %s stream", b.Kind)
			}
			if q := s.RabbitMQ; q != nil {
				switch {
				case q.DeliveryLimit != 0 && q.Type != QueueQuorum:
					return bad(sp+".rabbitmq.deliveryLimit", "x-delivery-limit is a quorum queue's argument, not a %s queue's", orDefault(string(q.Type), string(QueueClassic)))
				case q.DeliveryLimit < -1:
					return bad(sp+".rabbitmq.deliveryLimit", "%d: use a positive number, or -1 for unlimited", q.DeliveryLimit)
				case q.DeadLetterStrategy == DLAtLeastOnce && (q.Type != QueueQuorum || q.Overflow != OverflowRejectPublish):
					return bad(sp+".rabbitmq.deadLetterStrategy", "at-least-once dead-lettering needs a quorum queue with overflow reject-publish (RabbitMQ falls back to at-most-once otherwise)")
				case q.MaxLength < 0 || q.MessageTTL < 0 || q.Expires < 0:
					return bad(sp+".rabbitmq", "maxLength, messageTtl and expires must not be negative")
				case q.Overflow != "" && q.MaxLength == 0:
					return bad(sp+".rabbitmq.overflow", "overflow applies at maxLength, which is not declared")
				}
			}
			for k, c := range s.Consumers {
				cp := fmt.Sprintf("%s.consumers[%d]", sp, k)
				if c.RabbitMQ != nil && b.Kind != KindRabbitMQ {
					return bad(cp+".rabbitmq", "a rabbitmq block on a %s consumer", b.Kind)
				}
				if b.Kind == KindRabbitMQ && (c.AckWait != 0 || len(c.Backoff) > 0 || c.MaxDeliver != 0 || c.AckPolicy != "") {
					return bad(cp, "ackPolicy, ackWait, backoff and maxDeliver are NATS consumer settings: RabbitMQ redelivers on consumer_timeout (brokers[].rabbitmq.consumerTimeout) and counts against the queue's deliveryLimit")
				}
				if r := c.RabbitMQ; r != nil && r.Prefetch < 0 {
					return bad(cp+".rabbitmq.prefetch", "must not be negative")
				}
			}
		}
	}
	for i, pr := range p.Producers {
		pp := fmt.Sprintf("producers[%d]", i)
		b, _ := p.stream(pr.Broker, pr.Stream)
		if pr.RabbitMQ != nil && b.Kind != KindRabbitMQ {
			return bad(pp+".rabbitmq", "a rabbitmq block on a producer to a %s broker", b.Kind)
		}
		if r := pr.RabbitMQ; r != nil && (r.Rate < 0 || r.Burst < 0) {
			return bad(pp+".rabbitmq", "rate and burst must not be negative")
		}
	}
	return nil
}

// rabbitKind runs the RabbitMQ checks of one broker.
func (f *finder) rabbitKind(i int, b *Broker) {
	srv := b.RabbitMQ
	if srv == nil {
		srv = &RabbitMQServer{}
	}
	for j := range b.Streams {
		s := &b.Streams[j]
		q := s.RabbitMQ
		if q == nil {
			q = &RabbitMQQueue{}
		}
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		subject := fmt.Sprintf("rabbitmq %s/%s", b.Name, s.Name)
		if limit, how := q.EffectiveDeliveryLimit(srv.Version); limit > 0 && q.DeadLetterExchange == "" {
			field := sp + ".rabbitmq.deliveryLimit"
			if q.DeliveryLimit == 0 {
				field = fmt.Sprintf("brokers[%d].rabbitmq.version", i)
			}
			f.add("rabbitmq-delivery-limit-drops", subject, field,
				fmt.Sprintf("a message returned more than %d times is dropped: the queue names no dead-letter exchange", limit),
				[]string{fmt.Sprintf("%s: 1 delivery + %d redeliveries = %d deliveries; return number %d exceeds the limit and, with no x-dead-letter-exchange, RabbitMQ drops the message: a loss, not a retry", how, limit, limit+1, limit+1)},
				Mark{Label: "t0", Text: "delivery 1: the effect fails, the message is returned (basic.nack requeue, a closed channel)"},
				Mark{Label: "t1", Text: fmt.Sprintf("deliveries 2..%d fail the same way", limit+1)},
				Mark{Label: "t2", Text: "return " + strconv.Itoa(limit+1) + ": over the limit, dropped: nothing dead-lettered, nothing redelivered"})
		}
		f.rabbitBacklog(sp, subject, b, s, q)
		for k := range s.Consumers {
			f.rabbitConsumer(fmt.Sprintf("%s.consumers[%d]", sp, k), i, b, s, q, srv, &s.Consumers[k])
		}
	}
	f.rabbitWriters(b)
}

// rabbitConsumer checks one consumer's ack mode and its processing time
// against consumer_timeout.
func (f *finder) rabbitConsumer(cp string, bi int, b *Broker, s *Stream, q *RabbitMQQueue, srv *RabbitMQServer, c *BrokerConsumer) {
	rc := c.RabbitMQ
	if rc == nil {
		rc = &RabbitMQConsumer{}
	}
	subject := fmt.Sprintf("rabbitmq %s/%s consumer %s", b.Name, s.Name, c.Name)
	if rc.AckMode == AckAuto {
		f.add("rabbitmq-auto-ack", subject, cp+".rabbitmq.ackMode",
			"ackMode auto: RabbitMQ counts a delivery acknowledged once it is sent; a consumer that crashes before its effect loses the message, and nobody learns of it",
			[]string{"basic.consume no-ack true: the queue removes the message on delivery; prefetch does not bound what is in flight, so every message sent to a crashing consumer (its TCP buffer: up to the whole backlog) is lost silently"},
			Mark{Label: "t0", Text: "delivery of m1: the queue forgets it at once (auto-ack)"},
			Mark{Label: "t1", Text: "the consumer crashes before its effect: m1 is gone, never redelivered"})
	}
	p, pfield := f.maxProcessing(b, s, c.Name)
	ct, how := srv.ConsumerTimeoutOf()
	if rc.AckMode != AckAuto && p > ct {
		prefetch := "prefetch unlimited (0): every unacked delivery on the channel"
		n := "every unacked delivery on the channel"
		if rc.Prefetch > 0 {
			prefetch = fmt.Sprintf("prefetch %d", rc.Prefetch)
			n = fmt.Sprintf("up to %d unacked deliveries", rc.Prefetch)
		}
		arith := []string{
			fmt.Sprintf("processingTime %s (%s) > %s: the node closes the channel (PRECONDITION_FAILED, delivery acknowledgement timed out) while the effect runs", p, pfield, how),
			fmt.Sprintf("%s: %s go back to the queue and are delivered again; the late ack fails on the closed channel, so every slow message is processed twice (at least)", prefetch, n),
		}
		if limit, lhow := q.EffectiveDeliveryLimit(srv.Version); limit > 0 {
			arith = append(arith, fmt.Sprintf("each timeout is a return: with %s a message always slower than %s is dropped or dead-lettered after %d deliveries", lhow, ct, limit+1))
		}
		field := fmt.Sprintf("brokers[%d].rabbitmq.consumerTimeout", bi)
		if srv.ConsumerTimeout == 0 {
			field = pfield
		}
		f.add("rabbitmq-consumer-timeout", subject, field,
			fmt.Sprintf("processing takes up to %s, longer than the %s consumer timeout: the channel is closed and its deliveries redelivered, so each slow message is processed twice", p, ct),
			arith,
			Mark{Text: "m1 delivered; the effect starts"},
			Mark{At: Duration(ct), Text: "consumer_timeout: the node closes the channel, m1 is requeued and delivered again"},
			Mark{At: Duration(p), Text: "the first effect finishes; its ack fails (channel closed): the effect was done twice"})
	}
}

// rabbitBacklog checks a queue's TTL and drop-head max length against the
// backlog the declared producers' burst leaves behind the consumers.
func (f *finder) rabbitBacklog(sp, subject string, b *Broker, s *Stream, q *RabbitMQQueue) {
	if q.MessageTTL == 0 && (q.MaxLength == 0 || (q.Overflow != "" && q.Overflow != OverflowDropHead)) {
		return
	}
	rate, burst, pfield := 0, time.Duration(0), ""
	for i, pr := range f.p.Producers {
		if pr.Broker == b.Name && pr.Stream == s.Name && pr.RabbitMQ != nil && pr.RabbitMQ.Rate > 0 {
			rate += pr.RabbitMQ.Rate
			burst = max(burst, pr.RabbitMQ.Burst.D())
			pfield = fmt.Sprintf("producers[%d].rabbitmq.rate", i)
		}
	}
	// The consumers drain workers / processingTime messages a second.
	var drain float64
	for _, c := range f.p.Consumers {
		if c.Broker == b.Name && c.Stream == s.Name && c.ProcessingTime > 0 {
			drain += float64(max(c.Workers, 1)) / c.ProcessingTime.D().Seconds()
		}
	}
	if rate == 0 || burst == 0 || drain == 0 || float64(rate) <= drain {
		return
	}
	backlog := int((float64(rate) - drain) * burst.Seconds())
	wait := time.Duration(float64(backlog) / drain * float64(time.Second)).Round(time.Second)
	base := fmt.Sprintf("%d msg/s published for %s (%s), %.1f msg/s consumed (workers / processingTime): the backlog grows by %.1f msg/s to %d messages", rate, burst, pfield, drain, float64(rate)-drain, backlog)
	if q.MaxLength > 0 && (q.Overflow == "" || q.Overflow == OverflowDropHead) && q.MaxLength < backlog {
		f.add("rabbitmq-maxlen-backlog", subject, sp+".rabbitmq.maxLength",
			fmt.Sprintf("x-max-length %d with drop-head is smaller than the %d-message backlog: the oldest %d messages are dropped, each confirmed to its publisher", q.MaxLength, backlog, backlog-q.MaxLength),
			[]string{base, fmt.Sprintf("%d - x-max-length %d = %d messages dropped from the head (overflow %s: dead-lettered only with a dead-letter exchange)", backlog, q.MaxLength, backlog-q.MaxLength, orDefault(string(q.Overflow), string(OverflowDropHead)))},
			Mark{Text: "the burst starts; the consumers fall behind"},
			Mark{At: Duration(time.Duration(float64(q.MaxLength) / (float64(rate) - drain) * float64(time.Second)).Round(time.Second)), Text: fmt.Sprintf("%d messages queued: each new publish drops the oldest", q.MaxLength)},
			Mark{At: Duration(burst), Text: fmt.Sprintf("the burst ends: %d confirmed messages dropped", backlog-q.MaxLength)})
	}
	if q.MessageTTL > 0 && q.MessageTTL.D() < wait {
		f.add("rabbitmq-ttl-backlog", subject, sp+".rabbitmq.messageTtl",
			fmt.Sprintf("x-message-ttl %s is shorter than the %s the last message of a burst waits: messages expire before a consumer takes them", q.MessageTTL, wait),
			[]string{base, fmt.Sprintf("the last of %d messages waits %d / %.1f msg/s = %s > x-message-ttl %s: it expires in the queue (dead-lettered only with a dead-letter exchange)", backlog, backlog, drain, wait, q.MessageTTL)},
			Mark{Text: "the burst starts; the consumers fall behind"},
			Mark{At: q.MessageTTL, Text: "queued messages older than the TTL expire"},
			Mark{At: Duration(burst + wait), Text: "the backlog would have drained: the expired ones were never processed"})
	}
}

// rabbitWriters names a stream with two producers under one name.
func (f *finder) rabbitWriters(b *Broker) {
	seen := map[string]int{}
	for i, pr := range f.p.Producers {
		if pr.Broker != b.Name || pr.RabbitMQ == nil || pr.RabbitMQ.ProducerName == "" {
			continue
		}
		_, s := f.p.stream(pr.Broker, pr.Stream)
		if s.RabbitMQ == nil || s.RabbitMQ.Type != QueueStream {
			continue
		}
		key := s.Name + "\x00" + pr.RabbitMQ.ProducerName
		first, dup := seen[key]
		if !dup {
			seen[key] = i
			continue
		}
		name := pr.RabbitMQ.ProducerName
		f.add("rabbitmq-stream-writers", fmt.Sprintf("rabbitmq %s/%s producer name %s", b.Name, s.Name, name), fmt.Sprintf("producers[%d].rabbitmq.producerName", i),
			fmt.Sprintf("producers %s and %s both write to stream %s as %q: the stream keeps one last publishing id per name, so one writer's messages are dropped as duplicates of the other's", f.p.Producers[first].Name, pr.Name, s.Name, name),
			[]string{fmt.Sprintf("de-dupe by producer name: the stream drops a publishing id <= the last one stored for %q; two writers with their own sequences interleave, and the lower sequence's messages are dropped as duplicates (one writer per name)", name)},
			Mark{Label: "t0", Text: fmt.Sprintf("%s publishes id 100 as %q: stored", f.p.Producers[first].Name, name)},
			Mark{Label: "t1", Text: fmt.Sprintf("%s publishes id 7 as %q: 7 <= 100, dropped as a duplicate (a different message)", pr.Name, name)})
	}
}

// rabbitProducer checks a publisher's confirms and mandatory flag.
func (f *finder) rabbitProducer(i int, pr *Producer) {
	b, s := f.p.stream(pr.Broker, pr.Stream)
	if b.Kind != KindRabbitMQ {
		return
	}
	r := pr.RabbitMQ
	if r == nil {
		r = &RabbitMQProducer{}
	}
	pp := fmt.Sprintf("producers[%d]", i)
	subject := fmt.Sprintf("producer %s -> rabbitmq %s/%s", pr.Name, b.Name, s.Name)
	if !r.Confirms {
		f.add("rabbitmq-no-confirms", subject, pp+".rabbitmq.confirms",
			"no publisher confirms: basic.publish has no answer, so a publish the broker never took (a dropped connection, a refused queue) is lost without the producer knowing",
			[]string{"confirms false (a channel's default): the producer learns nothing of its publishes; with confirm.select every publish is answered basic.ack (taken, persisted for a durable queue) or basic.nack, and an unanswered one is retried"},
			Mark{Label: "t0", Text: "basic.publish m1; the connection drops before the broker has it"},
			Mark{Label: "t1", Text: "the producer counts m1 sent: no retry, m1 is lost"})
	}
	if !r.Mandatory {
		f.add("rabbitmq-no-mandatory", subject, pp+".rabbitmq.mandatory",
			"mandatory false: a publish no binding routes to a queue is dropped, and its confirm is still positive",
			[]string{"mandatory false (the default): an unroutable message is discarded silently; confirms alone ack it (nothing to store is not a failure); mandatory true returns it (basic.return) before the confirm"},
			Mark{Label: "t0", Text: "the binding of " + s.Name + " is missing (a deploy, a typo in the routing key)"},
			Mark{Label: "t1", Text: "basic.publish m1: routed nowhere, confirmed; m1 is lost"})
	}
}

// rabbitPipeline restates the RabbitMQ settings, defaults filled in.
func rabbitPipeline(b *Broker) []string {
	srv := b.RabbitMQ
	if srv == nil {
		srv = &RabbitMQServer{}
	}
	ct, _ := srv.ConsumerTimeoutOf()
	out := []string{fmt.Sprintf("rabbitmq %s: version %s, consumer_timeout %s", b.Name, orDefault(srv.Version, "not declared (before 4.0)"), ct)}
	for _, s := range b.Streams {
		q := s.RabbitMQ
		if q == nil {
			q = &RabbitMQQueue{}
		}
		limit, _ := q.EffectiveDeliveryLimit(srv.Version)
		lim := "none"
		if limit > 0 {
			lim = strconv.Itoa(limit)
		}
		out = append(out, fmt.Sprintf("  queue %s: type %s, x-delivery-limit %s, x-dead-letter-exchange %s, x-message-ttl %s, x-max-length %s (%s), x-expires %s",
			s.Name, orDefault(string(q.Type), string(QueueClassic)), lim, orDefault(q.DeadLetterExchange, "none"), durOr(q.MessageTTL, "none"),
			intOr(q.MaxLength, "none"), orDefault(string(q.Overflow), string(OverflowDropHead)), durOr(q.Expires, "never")))
	}
	return out
}

func durOr(d Duration, none string) string {
	if d == 0 {
		return none
	}
	return d.String()
}

func intOr(n int, none string) string {
	if n == 0 {
		return none
	}
	return strconv.Itoa(n)
}

// rabbitPublishAck is what a RabbitMQ publisher's answer is and proves.
func rabbitPublishAck(pr *Producer) (string, string) {
	r := pr.RabbitMQ
	if r == nil || !r.Confirms {
		return "none (no publisher confirms)", "nothing: basic.publish is not answered"
	}
	if !r.Mandatory {
		return "basic.ack (confirm)", "the broker took it: persisted to every queue it was routed to, or routed to none"
	}
	return "basic.ack (confirm), no basic.return before it", "every queue it was routed to holds it (persisted for a durable queue), and at least one did"
}
