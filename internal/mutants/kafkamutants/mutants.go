// Package kafkamutants holds deliberately broken Kafka clients for the
// self-test. Each sits in front of a real embedded kfake cluster and puts
// one defect in the client path (or in what the target declares), the kind
// of mistake seed 002 warns about for Kafka: a producer without idempotence,
// a commit before the handler ran, a commit of the wrong offset, a shutdown
// that commits what it never processed, a reset that does nothing, a broker
// that keeps nothing across a restart, a claim
// that the idempotent producer is business de-dupe; and, on share groups
// (Share), a client that accepts on poll, a release that forgets the
// delivery count, a lock that never ends in time, an accept that deletes.
// Each names the BR rules
// it must fail; the package test and `tck selftest --suite broker` check
// that it does.
package kafkamutants

import (
	"context"
	"sync"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/mutants"
	"github.com/onceproof/tck/mq"
)

// Mutant is one broken client, in front of an embedded kfake cluster.
type Mutant = mutants.Mutant[kafka.Client]

// All returns every Kafka mutant.
func All() []Mutant {
	return []Mutant{
		{
			Name: "no-idempotence", Defect: "produces with enable.idempotence=false: a retry after a lost reply is appended again",
			MustFail: []string{"BR-5.1"},
			Build: kafka.Client{
				Options: kafka.Options{Defects: kafka.Defects{NoIdempotence: true}},
			},
		},
		{
			Name: "claims-id-dedupe", Defect: "declares a 2s de-dupe window by message id: takes the idempotent producer for business de-dupe",
			MustFail: []string{"BR-1.1", "BR-5.2"},
			Build: kafka.Client{
				Declare: func(c mq.Capabilities) mq.Capabilities {
					c.DedupeWindow = 2 * time.Second
					return c
				},
			},
		},
		{
			Name: "commit-before-handler", Defect: "commits each record as it is handed out, before the handler ran (commit-then-process)",
			MustFail: []string{"BR-2.3", "BR-5.3"},
			Build: kafka.Client{
				Wrap: with(hooks{commitOnFetch: true}),
			},
		},
		{
			Name: "commit-own-offset", Defect: "commits the record's own offset instead of the next one",
			MustFail: []string{"BR-5.3", "BR-5.4"},
			Build: kafka.Client{
				Options: kafka.Options{Defects: kafka.Defects{CommitShift: -1}},
			},
		},
		{
			Name: "close-commits", Defect: "a member that ends commits every record it was handed, processed or not (auto-commit on leave)",
			MustFail: []string{"BR-2.3", "BR-5.3"},
			Build: kafka.Client{
				Wrap: with(hooks{commitOnClose: true}),
			},
		},
		{
			Name: "no-persistence", Defect: "runs a rule's own cluster without a data directory: what was acknowledged is gone after a restart",
			MustFail: []string{"BR-3.1"},
			Build: kafka.Client{
				Options: kafka.Options{Defects: kafka.Defects{NoPersistence: true}},
			},
		},
		{
			Name: "reset-noop", Defect: "resetting a group's offset reports success without committing it",
			MustFail: []string{"BR-5.4"},
			Build: kafka.Client{
				Wrap: with(hooks{resetNoop: true}),
			},
		},
	}
}

// hooks are the defects a wrapper puts in the client path.
type hooks struct {
	commitOnFetch bool
	commitOnClose bool
	resetNoop     bool
}

func with(h hooks) func(mq.Broker) mq.Broker {
	return func(b mq.Broker) mq.Broker { return &broker{Broker: b.(*kafka.Broker), h: h} }
}

// broker is a Kafka handle with a defect; embedding keeps its producer
// sessions and group offsets.
type broker struct {
	*kafka.Broker
	h hooks
}

func (b *broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	c, err := b.Broker.Consumer(ctx, topic, cfg)
	if err != nil {
		return nil, err
	}
	return &consumer{Consumer: c, h: b.h}, nil
}

func (b *broker) Reset(ctx context.Context, topic, group, position string) error {
	if b.h.resetNoop {
		return nil
	}
	return b.Broker.Reset(ctx, topic, group, position)
}

type consumer struct {
	mq.Consumer
	h    hooks
	mu   sync.Mutex
	held []mq.Delivery
}

func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	ds, err := c.Consumer.Fetch(ctx, max, wait)
	for _, d := range ds {
		if c.h.commitOnFetch {
			_ = d.Ack(ctx)
		}
	}
	c.mu.Lock()
	c.held = append(c.held, ds...)
	c.mu.Unlock()
	return ds, err
}

func (c *consumer) Close() error {
	if c.h.commitOnClose {
		c.mu.Lock()
		held := c.held
		c.held = nil
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for _, d := range held {
			_ = d.Ack(ctx)
		}
		cancel()
	}
	return c.Consumer.Close()
}

// Share returns the broken share-group clients (broker/kafka-share), each
// in front of an embedded kfake cluster with share groups.
func Share() []Mutant {
	return []Mutant{
		{
			Name: "share-auto-accept", Defect: "a share-group client that accepts each record as it is polled, before it was processed (kgo's implicit acknowledgement made immediate)",
			MustFail: []string{"BR-2.3", "BR-9.1", "BR-9.3"},
			Build:    kafka.Client{Options: kafka.Options{Defects: kafka.Defects{ShareAutoAccept: true}}},
		},
		{
			Name: "share-forget-count", Defect: "a share-group client whose release produces the record again and accepts the original: the delivery count never rises and the record is never archived",
			MustFail: []string{"BR-2.6", "BR-9.1", "BR-9.2"},
			Build:    kafka.Client{Options: kafka.Options{Defects: kafka.Defects{ShareForgetCount: true}}},
		},
		{
			Name: "share-lock-never-expires", Defect: "a cluster whose acquisition lock is an hour while the target declares seconds: a stopped member's records never come back in time",
			MustFail: []string{"BR-9.3"},
			Build:    kafka.Client{Options: kafka.Options{Defects: kafka.Defects{ShareLockNeverExpires: true}}},
		},
		{
			Name: "share-ack-deletes", Defect: "a share-group client that deletes the records up to each one it accepts, as if an ACCEPT were a delete",
			MustFail: []string{"BR-2.8", "BR-9.4"},
			Build:    kafka.Client{Options: kafka.Options{Defects: kafka.Defects{ShareAckDeletes: true}}},
		},
	}
}
