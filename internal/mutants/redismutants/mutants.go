// Package redismutants holds deliberately broken Redis Streams clients for the
// self-test. Each sits in front of a real redis-server (TCK_REDIS_URL) and
// puts one defect in the client path, or in what the adapter says: an ack
// that also deletes the entry, an ack never sent, a claim that ignores the
// min-idle-time or leaves the delivery counter alone, a trim that claims to
// keep pending entries or misreports what it removed. Each names the BR
// rules it must fail; the package test and `tck selftest --suite broker`
// (with TCK_REDIS_URL set) check that it does.
package redismutants

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/mutants"
	"github.com/onceproof/tck/mq"
)

// Mutant is one broken client, in front of a real redis-server.
type Mutant = mutants.Mutant[redis.Client]

// All returns every Redis mutant.
func All() []Mutant {
	return []Mutant{
		{
			Name: "ack-deletes", Defect: "Ack sends XACK and then XDEL, treating the stream as a work queue: the acknowledged entry is gone from the stream",
			MustFail: []string{"BR-4.1", "BR-2.8"},
			Build: redis.Client{
				Wrap: with(hooks{ack: func(ctx context.Context, b *redis.Broker, topic string, d mq.Delivery) error {
					if err := d.Ack(ctx); err != nil {
						return err
					}
					return b.Client().XDel(ctx, b.Key(topic), d.Position()).Err()
				}}),
			},
		},
		{
			Name: "ack-unsent", Defect: "Ack reports success without sending XACK: the entry stays in the pending list and is claimed again",
			MustFail: []string{"BR-4.1", "BR-2.2"},
			Build: redis.Client{
				Wrap: with(hooks{ack: func(context.Context, *redis.Broker, string, mq.Delivery) error { return nil }}),
			},
		},
		{
			Name: "ack-answers-zero", Defect: "a proxy between the client and the server forwards XACK but answers :0 (nothing removed): the server did remove the entry from the pending list, the client is told it was not pending",
			MustFail: []string{"BR-2.2", "BR-4.1"},
			Build: redis.Client{
				Options: redis.Options{Hook: xackAnswersZero{}},
			},
		},
		{
			Name: "claim-no-idle", Defect: "claims pending entries with min-idle-time 1ms instead of the ack wait: another member takes an entry its holder is still working on",
			MustFail: []string{"BR-4.2", "BR-2.1"},
			Build: redis.Client{
				Wrap: with(hooks{consumer: func(c mq.ConsumerConfig) mq.ConsumerConfig {
					c.AckWait = time.Millisecond
					return c
				}}),
			},
		},
		{
			Name: "claim-justid", Defect: "claims idle entries with XAUTOCLAIM JUSTID and reads them with XRANGE: the delivery counter never grows",
			MustFail: []string{"BR-4.2", "BR-2.1", "BR-2.3"},
			Build: redis.Client{
				Options: redis.Options{ClaimJustID: true},
			},
		},
		{
			Name: "in-progress-counts", Defect: "in-progress re-claims the entry with XCLAIM min-idle 0 but without JUSTID: every in-progress bumps the delivery counter, so the redelivery after one reads attempt 3",
			MustFail: []string{"BR-2.7"},
			Build: redis.Client{
				Wrap: with(hooks{inProgress: claimCounting}),
			},
		},
		{
			Name: "trim-claims-safe", Defect: "says its XTRIM keeps entries still pending (it does not: Redis 7 trims them with the rest)",
			MustFail: []string{"BR-4.3"},
			Build: redis.Client{
				Wrap: with(hooks{trim: func(t mq.Trim) mq.Trim {
					t.KeepsPending = true
					return t
				}}),
			},
		},
		{
			Name: "trim-count-mixup", Defect: "reports the MAXLEN it asked for as the number of entries its trim removed",
			MustFail: []string{"BR-4.3"},
			Build: redis.Client{
				Wrap: with(hooks{trimKeep: func(t mq.Trim, keep int) mq.Trim {
					t.Removed = keep
					return t
				}}),
			},
		},
	}
}

// xackAnswersZero is the proxy of the ack-answers-zero mutant, as a
// go-redis hook on every client of the handle: XACK goes to the server as
// sent, and its reply, whatever the server said, reaches the adapter as 0.
type xackAnswersZero struct{}

func (xackAnswersZero) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (xackAnswersZero) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if c, ok := cmd.(*goredis.IntCmd); ok && err == nil && cmd.Name() == "xack" {
			c.SetVal(0)
		}
		return err
	}
}

func (xackAnswersZero) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// claimCounting is the in-progress of the real adapter with JUSTID dropped:
// XCLAIM min-idle 0 for the entry's holder resets the idle time, and,
// without JUSTID, also raises the entry's delivery counter.
func claimCounting(ctx context.Context, b *redis.Broker, topic string, d mq.Delivery) error {
	rdb, key := b.Client(), b.Key(topic)
	groups, err := rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		return err
	}
	for _, g := range groups {
		p, err := rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: key, Group: g.Name, Start: d.Position(), End: d.Position(), Count: 1}).Result()
		if err != nil {
			return err
		}
		if len(p) == 1 {
			return rdb.XClaim(ctx, &goredis.XClaimArgs{Stream: key, Group: g.Name, Consumer: p[0].Consumer, MinIdle: 0, Messages: []string{d.Position()}}).Err()
		}
	}
	return fmt.Errorf("entry %s is not pending in any group of %s", d.Position(), key)
}

// hooks are the points a defect can change.
type hooks struct {
	ack        func(ctx context.Context, b *redis.Broker, topic string, d mq.Delivery) error
	inProgress func(ctx context.Context, b *redis.Broker, topic string, d mq.Delivery) error
	consumer   func(mq.ConsumerConfig) mq.ConsumerConfig
	trim       func(mq.Trim) mq.Trim
	trimKeep   func(mq.Trim, int) mq.Trim
}

func with(h hooks) func(*redis.Broker) mq.Broker {
	return func(b *redis.Broker) mq.Broker { return &broker{Broker: b, h: h} }
}

// broker is the real handle with one defect; it keeps the pending-list
// inspector and the trimmer of the real one.
type broker struct {
	*redis.Broker
	h hooks
}

func (b *broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if b.h.consumer != nil {
		cfg = b.h.consumer(cfg)
	}
	c, err := b.Broker.Consumer(ctx, topic, cfg)
	if err != nil || (b.h.ack == nil && b.h.inProgress == nil) {
		return c, err
	}
	return &consumer{Consumer: c, b: b, topic: topic}, nil
}

func (b *broker) Trim(ctx context.Context, topic string, keep int) (mq.Trim, error) {
	t, err := b.Broker.Trim(ctx, topic, keep)
	if err != nil {
		return t, err
	}
	if b.h.trim != nil {
		t = b.h.trim(t)
	}
	if b.h.trimKeep != nil {
		t = b.h.trimKeep(t, keep)
	}
	return t, nil
}

type consumer struct {
	mq.Consumer
	b     *broker
	topic string
}

func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	ds, err := c.Consumer.Fetch(ctx, max, wait)
	for i, d := range ds {
		ds[i] = &delivery{Delivery: d, c: c}
	}
	return ds, err
}

type delivery struct {
	mq.Delivery
	c *consumer
}

func (d *delivery) Ack(ctx context.Context) error {
	if d.c.b.h.ack == nil {
		return d.Delivery.Ack(ctx)
	}
	return d.c.b.h.ack(ctx, d.c.b.Broker, d.c.topic, d.Delivery)
}

func (d *delivery) InProgress(ctx context.Context) error {
	if d.c.b.h.inProgress == nil {
		return d.Delivery.InProgress(ctx)
	}
	return d.c.b.h.inProgress(ctx, d.c.b.Broker, d.c.topic, d.Delivery)
}
