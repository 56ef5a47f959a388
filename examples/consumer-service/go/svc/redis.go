package svc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// runRedis reads the consumer group ONCEPROOF_GROUP of the stream key
// ONCEPROOF_STREAM, one entry at a time, as the consumer named after the
// replica. Redis redelivers nothing by itself: each round first claims an
// entry of the group idle longer than the ack wait (XAUTOCLAIM, whoever
// held it: a replica that died, or one that failed and left it pending),
// then reads a new one (XREADGROUP >). The ack is XACK.
func (s *service) runRedis(ctx context.Context) error {
	var cfg [3]string
	for i, n := range []string{"ONCEPROOF_REDIS_URL", "ONCEPROOF_STREAM", "ONCEPROOF_GROUP"} {
		v, err := env(n)
		if err != nil {
			return err
		}
		cfg[i] = v
	}
	o, err := goredis.ParseURL(cfg[0])
	if err != nil {
		return errors.New("ONCEPROOF_REDIS_URL is not a Redis URL")
	}
	o.ClientName = "consumer-service-" + s.worker
	rdb := goredis.NewClient(o)
	defer rdb.Close()
	key, group, name := cfg[1], cfg[2], s.worker
	if name == "" {
		name = fmt.Sprintf("svc-%d", os.Getpid())
	}
	fmt.Printf("%s: started (pid %d), reading %s group %s\n", s.worker, os.Getpid(), key, group)
	for ctx.Err() == nil {
		msgs, _, err := rdb.XAutoClaim(ctx, &goredis.XAutoClaimArgs{Stream: key, Group: group, Consumer: name, MinIdle: s.lease, Start: "0-0", Count: 1}).Result()
		if err == nil && len(msgs) == 0 {
			var streams []goredis.XStream
			streams, err = rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: group, Consumer: name, Streams: []string{key, ">"}, Count: 1, Block: 100 * time.Millisecond}).Result()
			for _, st := range streams {
				msgs = append(msgs, st.Messages...)
			}
		}
		if err != nil && !errors.Is(err, goredis.Nil) {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(os.Stderr, "%s: read: %v\n", s.worker, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, m := range msgs {
			if m.Values == nil {
				continue // deleted from the stream while pending
			}
			s.deliver(ctx, redisDelivery{ctx: ctx, rdb: rdb, key: key, group: group, m: m})
		}
	}
	return nil
}

// redisDelivery is an entry as broker/redis stores a message: fields "id",
// "payload" and "h:NAME" per header.
type redisDelivery struct {
	ctx        context.Context
	rdb        *goredis.Client
	key, group string
	m          goredis.XMessage
}

func (d redisDelivery) field(name string) string {
	v, _ := d.m.Values[name].(string)
	return v
}

func (d redisDelivery) Data() []byte              { return []byte(d.field("payload")) }
func (d redisDelivery) Header(name string) string { return d.field("h:" + name) }
func (d redisDelivery) Attempt() string           { return "?" }

// Ack is XACK; a reply of 0 means the entry was no longer ours to ack
// (another replica claimed and acked it).
func (d redisDelivery) Ack() error {
	n, err := d.rdb.XAck(d.ctx, d.key, d.group, d.m.ID).Result()
	if err == nil && n != 1 {
		return fmt.Errorf("XACK %s: the entry was no longer pending", d.m.ID)
	}
	return err
}

// Nak: Redis has none; the entry stays pending and comes back when a
// replica claims it after the ack wait.
func (d redisDelivery) Nak(time.Duration) error { return nil }

// Term acks an entry the service can never read: Redis has no terminate.
func (d redisDelivery) Term() error {
	return d.rdb.XAck(d.ctx, d.key, d.group, d.m.ID).Err()
}
