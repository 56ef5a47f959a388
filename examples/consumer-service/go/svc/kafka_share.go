package svc

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runKafkaShare reads ONCEPROOF_TOPIC as a member of the share group
// ONCEPROOF_GROUP (KIP-932; ONCEPROOF_BROKER=kafka-share), one record a
// fetch, with franz-go's share consumer. Ack is ACCEPT, flushed and
// confirmed before the next poll (kgo would accept an unacknowledged
// record of the previous poll by itself); Term is REJECT; Nak holds the
// record for its delay, renewing its lock (RENEW) each half lock
// (ONCEPROOF_ACK_WAIT is the group's lock), then RELEASEs it: KIP-932 has
// no delayed release. Every replica is a member: a share group hands one
// partition's records to several.
func (s *service) runKafkaShare(ctx context.Context) error {
	var cfg [3]string
	for i, n := range []string{"ONCEPROOF_KAFKA_BROKERS", "ONCEPROOF_TOPIC", "ONCEPROOF_GROUP"} {
		v, err := env(n)
		if err != nil {
			return err
		}
		cfg[i] = v
	}
	seeds, topic, group := strings.Split(cfg[0], ","), cfg[1], cfg[2]
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(1), kgo.ShareMaxRecordsStrict(), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Printf("%s: started (pid %d), reading %s as a member of share group %s\n", s.worker, os.Getpid(), topic, group)
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 1)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "%s: fetch: %v\n", s.worker, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			s.deliver(ctx, &shareDelivery{ctx: ctx, cl: cl, r: r, lock: s.lease})
		})
	}
	return nil
}

type shareDelivery struct {
	ctx  context.Context
	cl   *kgo.Client
	r    *kgo.Record
	lock time.Duration
}

func (d *shareDelivery) Data() []byte { return d.r.Value }
func (d *shareDelivery) Header(name string) string {
	for _, h := range d.r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}
func (d *shareDelivery) Attempt() string { return strconv.Itoa(int(d.r.DeliveryCount())) }

// settle marks the record and waits for the broker's answer.
func (d *shareDelivery) settle(st kgo.AckStatus) error {
	d.r.Ack(st)
	return d.cl.FlushAcks(d.ctx)
}

func (d *shareDelivery) Ack() error  { return d.settle(kgo.AckAccept) }
func (d *shareDelivery) Term() error { return d.settle(kgo.AckReject) }

// Nak holds the record for delay (renewing its lock each half lock), then
// releases it for a redelivery.
func (d *shareDelivery) Nak(delay time.Duration) error {
	until := time.Now().Add(delay)
	for {
		left := time.Until(until)
		if left <= 0 || d.ctx.Err() != nil {
			return d.settle(kgo.AckRelease)
		}
		time.Sleep(min(left, d.lock/2))
		if time.Until(until) > 0 {
			if err := d.settle(kgo.AckRenew); err != nil {
				return err
			}
		}
	}
}
