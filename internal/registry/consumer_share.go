package registry

import (
	"context"
	"fmt"
	"github.com/onceproof/tck/suites/consumer"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/mq"
)

// consumerShare is what the kit's kfake runs share groups with under the
// consumer suite: a lock short enough that the suite's ack wait of two
// seed minutes is the lock at a clock scale of 240 (a seed minute is
// 250 ms), and a delivery limit of 50, past Kafka's bound of 10
// (group.share.delivery.count.limit, valid 2..10): the suite crashes one
// event more than once, every crash hands the record back at once (the
// member leaves) and every RELEASE of a consumer that waits out a crashed
// worker's claim counts a delivery; a run of CO-2.5 saw the reference
// consumer reach 10 (two crashes, each a 4-minute claim waited out in
// 1-minute naks). The consumer suite checks the consumer, not the limit
// (broker/kafka-share's BR-9 rules do; tck plan --profile names the
// hazard).
var consumerShare = kafka.Share{LockDuration: 500 * time.Millisecond, DeliveryLimit: 50}

// shareLocked is a handle whose ack wait is a share group's lock.
type shareLocked interface{ Share() kafka.Share }

// shareScale is the clock scale at which the consumer suite's ack wait
// (two seed minutes) is the share group's lock.
func shareScale(lock time.Duration) float64 { return float64(2*time.Minute) / float64(lock) }

// shareConsumerBroker is a share-group handle as the consumer suite needs
// it. KIP-932 has no delayed release, so a nak with a delay is the member
// holding the record that long (renewing the lock, RENEW, before it would
// end) and then releasing it: the record is not redelivered before the
// delay, as the contract's nak says. Each rule's group is its own (the
// suite names one group, "consumer", on a topic per rule), so that rules
// running at once do not share a group's assignment; an ack wait that is
// the lock is left to the group (a member cannot ask for another).
type shareConsumerBroker struct {
	mq.Broker
	lock time.Duration
}

func (b *shareConsumerBroker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if d := cfg.AckWait - b.lock; d > -time.Millisecond && d < time.Millisecond {
		cfg.AckWait = 0
	}
	cfg.Group += "-" + topic
	c, err := b.Broker.Consumer(ctx, topic, cfg)
	if err != nil {
		return nil, err
	}
	return &heldConsumer{Consumer: c, lock: b.lock}, nil
}

type heldConsumer struct {
	mq.Consumer
	lock time.Duration
}

func (c *heldConsumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	ds, err := c.Consumer.Fetch(ctx, max, wait)
	for i, d := range ds {
		ds[i] = &heldDelivery{Delivery: d, lock: c.lock}
	}
	return ds, err
}

type heldDelivery struct {
	mq.Delivery
	lock time.Duration
}

// Nak holds the record for delay, renewing its lock every half lock, then
// releases it.
func (d *heldDelivery) Nak(ctx context.Context, delay time.Duration) error {
	until := time.Now().Add(delay)
	for {
		left := time.Until(until)
		if left <= 0 {
			return d.Delivery.Nak(ctx, 0)
		}
		t := time.NewTimer(min(left, d.lock/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("nak of %s: held for its delay, then: %w", d.Position(), ctx.Err())
		case <-t.C:
		}
		if time.Until(until) > 0 {
			if err := d.InProgress(ctx); err != nil {
				return fmt.Errorf("nak of %s: renewing its lock while it is held for the delay: %w", d.Position(), err)
			}
		}
	}
}

// overShareGroup makes the consumer suite run over a share group: its
// clock scaled so that the ack wait is the group's lock, its handle
// holding a nak's delay (shareConsumerBroker), and so the broker has the
// delayed nak the CO rules need. It returns what the report says of it.
func overShareGroup(t consumer.Target, caps mq.Capabilities, s kafka.Share) (consumer.Target, mq.Capabilities, map[string]string) {
	open := t.Broker
	t.Broker = func(ctx context.Context) (mq.Broker, error) {
		b, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return &shareConsumerBroker{Broker: b, lock: s.LockDuration}, nil
	}
	t.Timing.Scale = shareScale(s.LockDuration)
	caps.NakDelay = true
	t.BrokerCaps = &caps
	minute := time.Duration(float64(time.Minute) / t.Timing.Scale)
	return t, caps, map[string]string{
		"clockScale":        fmt.Sprintf("x%.0f (a seed minute is %s real): the ack wait of 2m seed is the share group's lock", t.Timing.Scale, minute),
		"ackWait":           fmt.Sprintf("2m seed = %s real: group.share.record.lock.duration.ms", s.LockDuration),
		"redeliveryHorizon": fmt.Sprintf("11m seed (%s real)", 11*minute),
		"maxDeliver":        fmt.Sprintf("%d: group.share.delivery.count.limit (every RELEASE counts a delivery; the record is archived at the limit; the kit's kfake for this suite runs past Kafka's bound of 10)", s.DeliveryLimit),
		"nak":               "RELEASE after the kit's member holds the record for the delay, renewing its lock (RENEW) before it ends: KIP-932 has no delayed release",
		"group":             "a share group per rule (consumer-<the rule's topic>)",
	}
}
