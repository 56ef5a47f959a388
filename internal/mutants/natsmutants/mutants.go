// Package natsmutants holds deliberately broken broker clients for the
// self-test. Each sits in front of a real embedded NATS JetStream and puts
// one defect in the client path (or in what the target declares), the kind
// of mistake seed 002 warns about: a producer that mints a fresh message id
// per send, an ack that is never sent, a nak that ignores its delay, a
// close that acks what it held. Each names the BR rules it must fail; the
// package test and `tck selftest --suite broker` check that it does, and
// that every BR rule is failed by at least one mutant.
package natsmutants

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/mutants"
	"github.com/onceproof/tck/mq"
)

// Mutant is one broken client, in front of a real embedded NATS JetStream.
type Mutant = mutants.Mutant[nats.Client]

// All returns every broker mutant.
func All() []Mutant {
	return []Mutant{
		{
			Name: "fresh-id", Defect: "the producer mints a fresh message id on every send, retries included",
			MustFail: []string{"BR-1.1", "BR-1.2", "BR-1.3", "BR-1.5", "BR-1.6"},
			Build: nats.Client{
				Wrap: with(hooks{publish: func(m mq.Message) mq.Message {
					m.ID = m.ID + "~" + nonce()
					return m
				}}),
			},
		},
		{
			Name: "id-column-64", Defect: "the producer cuts message ids to 64 characters (its outbox column's width): two long ids sharing a prefix become one, and the second intent is dropped as a duplicate",
			MustFail: []string{"BR-1.8"},
			Build: nats.Client{
				Wrap: with(hooks{publish: func(m mq.Message) mq.Message {
					if len(m.ID) > 64 {
						m.ID = m.ID[:64]
					}
					return m
				}}),
			},
		},
		{
			Name: "id-hashcode", Defect: "the producer keys its de-dupe by the id's 32-bit hash (Java's String.hashCode): two ids with one hash become one, and the second intent is dropped as a duplicate",
			MustFail: []string{"BR-1.8"},
			Build: nats.Client{
				Wrap: with(hooks{publish: func(m mq.Message) mq.Message {
					var h int32
					for _, c := range m.ID {
						h = 31*h + int32(c)
					}
					m.ID = fmt.Sprintf("h%d", h)
					return m
				}}),
			},
		},
		{
			Name: "short-window", Defect: "declares the window it asked for, but creates topics with half of it",
			MustFail: []string{"BR-1.2", "BR-1.3", "BR-6.1"},
			Build: nats.Client{
				Wrap: with(hooks{topic: func(c mq.TopicConfig) mq.TopicConfig {
					c.DedupeWindow /= 2
					return c
				}}),
			},
		},
		{
			Name: "claims-refresh", Defect: "declares that a duplicate hit refreshes the de-dupe window (NATS does not)",
			MustFail: []string{"BR-1.4"},
			Build: nats.Client{
				Declare: func(c mq.Capabilities) mq.Capabilities {
					c.DedupeRefreshOnHit = true
					return c
				},
			},
		},
		{
			Name: "claims-dedupe-restart", Defect: "declares that the de-dupe state survives a restart under work-queue retention too",
			MustFail: []string{"BR-1.7"},
			Build: nats.Client{
				Declare: func(c mq.Capabilities) mq.Capabilities {
					c.DedupeAfterRestart = []mq.Retention{mq.Limits, mq.WorkQueue}
					return c
				},
			},
		},
		{
			Name: "memory-storage", Defect: "creates every topic in memory: acked publishes vanish with a restart",
			MustFail: []string{"BR-1.7", "BR-3.1"},
			Build: nats.Client{
				Options: nats.Options{Memory: true},
			},
		},
		{
			Name: "ack-unsent", Defect: "Ack reports success without telling the broker",
			MustFail: []string{"BR-2.2", "BR-2.8"},
			Build: nats.Client{
				Wrap: with(hooks{ack: func(context.Context, mq.Delivery) error { return nil }}),
			},
		},
		{
			Name: "redelivery-as-new", Defect: "the consumer reports every delivery as a first attempt",
			MustFail: []string{"BR-2.1"},
			Build: nats.Client{
				Wrap: with(hooks{attempt: func(int) int { return 1 }}),
			},
		},
		{
			Name: "nak-no-delay", Defect: "nak ignores the requested delay",
			MustFail: []string{"BR-2.4"},
			Build: nats.Client{
				Wrap: with(hooks{nak: func(ctx context.Context, d mq.Delivery, _ time.Duration) error {
					return d.Nak(ctx, 0)
				}}),
			},
		},
		{
			// Plain nak's redelivery "as soon as possible": the ack wait's
			// redelivery comes later than half of it.
			Name: "nak-unsent", Defect: "Nak reports success without telling the broker",
			MustFail: []string{"BR-2.4"},
			Build: nats.Client{
				Wrap: with(hooks{nak: func(context.Context, mq.Delivery, time.Duration) error { return nil }}),
			},
		},
		{
			Name: "nak-as-term", Defect: "nak terminates the message instead of asking for redelivery",
			MustFail: []string{"BR-2.4", "BR-2.9"},
			Build: nats.Client{
				Wrap: with(hooks{nak: func(ctx context.Context, d mq.Delivery, _ time.Duration) error {
					return d.Term(ctx)
				}}),
			},
		},
		{
			Name: "term-as-nak", Defect: "term asks for redelivery instead of stopping it",
			MustFail: []string{"BR-2.5"},
			Build: nats.Client{
				Wrap: with(hooks{term: func(ctx context.Context, d mq.Delivery) error {
					return d.Nak(ctx, 0)
				}}),
			},
		},
		{
			Name: "no-max-deliver", Defect: "opens consumers without the max-deliver limit it was given",
			MustFail: []string{"BR-2.6"},
			Build: nats.Client{
				Wrap: with(hooks{consumer: func(c mq.ConsumerConfig) mq.ConsumerConfig {
					c.MaxDeliver = 0
					return c
				}}),
			},
		},
		{
			Name: "in-progress-noop", Defect: "in-progress reports success without telling the broker",
			MustFail: []string{"BR-2.7"},
			Build: nats.Client{
				Wrap: with(hooks{inProgress: func(context.Context, mq.Delivery) error { return nil }}),
			},
		},
		{
			Name: "in-progress-counts", Defect: "the client counts deliveries itself and counts each in-progress as one: the redelivery after an in-progress reads attempt 3",
			MustFail: []string{"BR-2.7"},
			Build: nats.Client{
				Wrap: with(hooks{countsInProgress: true}),
			},
		},
		{
			Name: "close-acks", Defect: "closing a consumer acks every delivery it still holds, processed or not",
			MustFail: []string{"BR-2.3", "BR-2.9"},
			Build: nats.Client{
				Wrap: with(hooks{closeAcks: true}),
			},
		},
		{
			Name: "batch-split", Defect: "publishes a batch's members one by one as plain publishes: a batch stopped midway, or over the size limit, leaves a part",
			MustFail: []string{"BR-8.2", "BR-8.3"},
			Build: nats.Client{
				Wrap: with(hooks{batch: splitBatch}),
			},
		},
		{
			Name: "batch-commit-dropped", Defect: "drops a batch's commit message and reports the batch committed: acked members are never stored",
			MustFail: []string{"BR-8.1", "BR-8.3"},
			Build: nats.Client{
				Wrap: with(hooks{batch: dropCommit}),
			},
		},
		{
			Name: "batch-retry-fresh", Defect: "sends every batch, a retry after a lost commit reply included, under a fresh batch id and fresh message ids",
			MustFail: []string{"BR-8.1"},
			Build: nats.Client{
				Wrap: with(hooks{batch: func(ctx context.Context, b *broker, topic string, bt mq.Batch) (mq.BatchAck, error) {
					n := nonce()
					bt.ID = "retry-" + n
					msgs := make([]mq.Message, len(bt.Messages))
					for i, m := range bt.Messages {
						m.ID = fmt.Sprintf("%s~%s-%d", m.ID, n, i)
						msgs[i] = m
					}
					bt.Messages = msgs
					return b.batches().PublishBatch(ctx, topic, bt)
				}}),
			},
		},
		{
			Name: "limits-only", Defect: "creates every topic with limits retention, work queues included",
			MustFail: []string{"BR-2.8"},
			Build: nats.Client{
				Wrap: with(hooks{topic: func(c mq.TopicConfig) mq.TopicConfig {
					c.Retention = mq.Limits
					return c
				}}),
			},
		},
	}
}

func nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hooks are the places a defect can sit; nil means healthy.
type hooks struct {
	publish    func(mq.Message) mq.Message
	topic      func(mq.TopicConfig) mq.TopicConfig
	consumer   func(mq.ConsumerConfig) mq.ConsumerConfig
	attempt    func(int) int
	ack        func(context.Context, mq.Delivery) error
	nak        func(context.Context, mq.Delivery, time.Duration) error
	term       func(context.Context, mq.Delivery) error
	inProgress func(context.Context, mq.Delivery) error
	closeAcks  bool
	// countsInProgress: an in-progress adds one to the attempt of every
	// later delivery of the message.
	countsInProgress bool
	// batch publishes an atomic batch in place of the adapter.
	batch func(ctx context.Context, b *broker, topic string, bt mq.Batch) (mq.BatchAck, error)
}

func with(h hooks) func(mq.Broker) mq.Broker {
	return func(b mq.Broker) mq.Broker { return &broker{Broker: b, h: h} }
}

type broker struct {
	mq.Broker
	h hooks
}

func (b *broker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if b.h.topic != nil {
		cfg = b.h.topic(cfg)
	}
	return b.Broker.CreateTopic(ctx, name, cfg)
}

func (b *broker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	if b.h.publish != nil {
		m = b.h.publish(m)
	}
	return b.Broker.Publish(ctx, topic, m)
}

func (b *broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if b.h.consumer != nil {
		cfg = b.h.consumer(cfg)
	}
	c, err := b.Broker.Consumer(ctx, topic, cfg)
	if err != nil {
		return nil, err
	}
	return &consumer{Consumer: c, h: b.h, held: map[*delivery]bool{}, inProgress: map[string]int{}}, nil
}

// Acked passes the broker's answer through untouched.
func (b *broker) Acked(ctx context.Context, topic, group, position string) (bool, error) {
	if a, ok := b.Broker.(mq.AckedInspector); ok {
		return a.Acked(ctx, topic, group, position)
	}
	return false, mq.ErrUnsupported
}

// WatchMaxDeliver passes the broker's signal through untouched.
func (b *broker) WatchMaxDeliver(ctx context.Context, topic, group string) (<-chan string, error) {
	if w, ok := b.Broker.(mq.MaxDeliverWatcher); ok {
		return w.WatchMaxDeliver(ctx, topic, group)
	}
	return nil, mq.ErrUnsupported
}

// batches is the adapter's batch publisher (the NATS adapter has one).
func (b *broker) batches() mq.BatchPublisher {
	bp, _ := b.Broker.(mq.BatchPublisher)
	return bp
}

// PublishBatch passes a batch through, or through the defect.
func (b *broker) PublishBatch(ctx context.Context, topic string, bt mq.Batch) (mq.BatchAck, error) {
	if b.h.batch != nil {
		return b.h.batch(ctx, b, topic, bt)
	}
	if bp := b.batches(); bp != nil {
		return bp.PublishBatch(ctx, topic, bt)
	}
	return mq.BatchAck{}, mq.ErrUnsupported
}

// BatchLimits passes the adapter's limits through untouched.
func (b *broker) BatchLimits() mq.BatchLimits {
	if bp := b.batches(); bp != nil {
		return bp.BatchLimits()
	}
	return mq.BatchLimits{}
}

// splitBatch publishes the members one by one, each stored as it comes.
func splitBatch(ctx context.Context, b *broker, topic string, bt mq.Batch) (mq.BatchAck, error) {
	n := len(bt.Messages)
	if bt.Abandon > 0 {
		n = min(n, bt.Abandon)
	}
	var ack mq.BatchAck
	for _, m := range bt.Messages[:n] {
		a, err := b.Broker.Publish(ctx, topic, m)
		if err != nil {
			return mq.BatchAck{}, err
		}
		ack.Positions = append(ack.Positions, a.Position)
	}
	if bt.Abandon > 0 {
		return mq.BatchAck{}, nil
	}
	if bt.NoCommitReply {
		return mq.BatchAck{}, mq.ErrCommitUnconfirmed
	}
	return ack, nil
}

// dropCommit sends every member but the commit (the batch stays staged
// until the server abandons it) and reports the batch committed.
func dropCommit(ctx context.Context, b *broker, topic string, bt mq.Batch) (mq.BatchAck, error) {
	if bt.Abandon > 0 || len(bt.Messages) < 2 {
		if bt.Abandon > 0 {
			return b.batches().PublishBatch(ctx, topic, bt)
		}
		return mq.BatchAck{Positions: []string{"1"}}, nil
	}
	staged := bt
	staged.Abandon = len(bt.Messages) - 1
	if _, err := b.batches().PublishBatch(ctx, topic, staged); err != nil {
		return mq.BatchAck{}, err
	}
	if bt.NoCommitReply {
		return mq.BatchAck{}, mq.ErrCommitUnconfirmed
	}
	ack := mq.BatchAck{Positions: make([]string, len(bt.Messages))}
	for i := range ack.Positions {
		ack.Positions[i] = strconv.Itoa(i + 1)
	}
	return ack, nil
}

type consumer struct {
	mq.Consumer
	h    hooks
	mu   sync.Mutex
	held map[*delivery]bool // fetched and not yet settled
	// inProgress counts the in-progress acks sent per message id.
	inProgress map[string]int
}

func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	ds, err := c.Consumer.Fetch(ctx, max, wait)
	out := make([]mq.Delivery, len(ds))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, d := range ds {
		w := &delivery{Delivery: d, c: c, extra: c.inProgress[d.Message().ID]}
		c.held[w] = true
		out[i] = w
	}
	return out, err
}

func (c *consumer) Close() error {
	if c.h.closeAcks {
		c.mu.Lock()
		held := c.held
		c.held = map[*delivery]bool{}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		for d := range held {
			_ = d.Delivery.Ack(ctx)
		}
		cancel()
	}
	return c.Consumer.Close()
}

type delivery struct {
	mq.Delivery
	c     *consumer
	extra int // in-progress acks counted as deliveries before this one
}

func (d *delivery) settled() {
	d.c.mu.Lock()
	delete(d.c.held, d)
	d.c.mu.Unlock()
}

func (d *delivery) Attempt() int {
	if d.c.h.attempt != nil {
		return d.c.h.attempt(d.Delivery.Attempt())
	}
	if d.c.h.countsInProgress {
		return d.Delivery.Attempt() + d.extra
	}
	return d.Delivery.Attempt()
}

func (d *delivery) Ack(ctx context.Context) error {
	d.settled()
	if d.c.h.ack != nil {
		return d.c.h.ack(ctx, d.Delivery)
	}
	return d.Delivery.Ack(ctx)
}

func (d *delivery) Nak(ctx context.Context, delay time.Duration) error {
	d.settled()
	if d.c.h.nak != nil {
		return d.c.h.nak(ctx, d.Delivery, delay)
	}
	return d.Delivery.Nak(ctx, delay)
}

func (d *delivery) Term(ctx context.Context) error {
	d.settled()
	if d.c.h.term != nil {
		return d.c.h.term(ctx, d.Delivery)
	}
	return d.Delivery.Term(ctx)
}

func (d *delivery) InProgress(ctx context.Context) error {
	if d.c.h.countsInProgress {
		d.c.mu.Lock()
		d.c.inProgress[d.Message().ID]++
		d.c.mu.Unlock()
	}
	if d.c.h.inProgress != nil {
		return d.c.h.inProgress(ctx, d.Delivery)
	}
	return d.Delivery.InProgress(ctx)
}
