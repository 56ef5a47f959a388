package svc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runKafka reads partition 0 of ONCEPROOF_TOPIC from the committed offset
// of ONCEPROOF_GROUP (one replica, no group membership), one record at a
// time, with franz-go; the ack is a commit of the record's offset + 1
// (kadm), made after its effects. Kafka has no nak: a nak waits its delay
// and reads on again from the committed offset.
func (s *service) runKafka(ctx context.Context) error {
	var cfg [3]string
	for i, n := range []string{"ONCEPROOF_KAFKA_BROKERS", "ONCEPROOF_TOPIC", "ONCEPROOF_GROUP"} {
		v, err := env(n)
		if err != nil {
			return err
		}
		cfg[i] = v
	}
	seeds, topic, group := strings.Split(cfg[0], ","), cfg[1], cfg[2]
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer adm.Close()
	ad := kadm.NewClient(adm)
	fmt.Printf("%s: started (pid %d), reading %s group %s\n", s.worker, os.Getpid(), topic, group)
	for ctx.Err() == nil {
		at := int64(0)
		offs, err := ad.FetchOffsets(ctx, group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			err = nil // nothing committed yet
		}
		if err == nil {
			if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil && o.At >= 0 {
				at = o.At
			}
		} else {
			fmt.Fprintf(os.Stderr, "%s: committed offset: %v\n", s.worker, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(at)}}))
		if err != nil {
			return err
		}
		rewind := false
		for !rewind && ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 1)
			fs.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "%s: fetch: %v\n", s.worker, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if rewind {
					return
				}
				d := &kafkaDelivery{ctx: ctx, ad: ad, group: group, r: r}
				s.deliver(ctx, d)
				rewind = d.naked
			})
		}
		cl.Close()
	}
	return nil
}

type kafkaDelivery struct {
	ctx   context.Context
	ad    *kadm.Client
	group string
	r     *kgo.Record
	naked bool
}

func (d *kafkaDelivery) Data() []byte { return d.r.Value }
func (d *kafkaDelivery) Header(name string) string {
	for _, h := range d.r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}
func (d *kafkaDelivery) Attempt() string { return "?" }

// Ack commits the record's offset + 1 for the group.
func (d *kafkaDelivery) Ack() error {
	var o kadm.Offsets
	o.AddOffset(d.r.Topic, d.r.Partition, d.r.Offset+1, -1)
	resp, err := d.ad.CommitOffsets(d.ctx, d.group, o)
	if err != nil {
		return err
	}
	return resp.Error()
}

// Nak: Kafka has none; wait, then read on from the committed offset.
func (d *kafkaDelivery) Nak(delay time.Duration) error {
	d.naked = true
	time.Sleep(delay)
	return nil
}

// Term commits past a record the service can never read.
func (d *kafkaDelivery) Term() error { return d.Ack() }
