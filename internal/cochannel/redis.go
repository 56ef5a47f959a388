package cochannel

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/onceproof/tck/internal/coservice"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/mq"
)

// OpenRedis creates, on the Redis server at redisURL, the rule's stream key
// (under broker/redis's key prefix, so `tck clean` and a shared server's
// owners see it is the kit's) and the consumer group DurableName reading it
// from the start. Redis has no ack wait of its own: a service redelivers by
// claiming entries idle longer than ONCEPROOF_ACK_WAIT (XAUTOCLAIM), as
// broker/redis does; nor a max deliver. On a rediss:// URL the kit's client
// and the proxies speak TLS to the server with tlsCfg (nil: the system's
// roots), the proxies plain text to the service (tls.go).
func OpenRedis(ctx context.Context, redisURL, name string, tlsCfg *tls.Config) (coservice.Channel, error) {
	o, err := goredis.ParseURL(redisURL)
	if err != nil {
		return nil, errors.New("not a Redis URL (want redis:// or rediss://[user:password@]host:port/db)")
	}
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, errors.New("not a Redis URL (want redis:// or rediss://[user:password@]host:port/db)")
	}
	if o.TLSConfig != nil && tlsCfg != nil {
		// go-redis names the URL's host as the server; the material wins.
		c := tlsCfg.Clone()
		if c.ServerName == "" {
			c.ServerName = o.TLSConfig.ServerName
		}
		o.TLSConfig = c
	}
	o.ClientName = "onceproof-tck-consumer-process" // Redis takes no spaces in one
	o.MaxRetries = -1                               // a retried XADD would add a second entry
	o.DialTimeout = 5 * time.Second
	rdb := goredis.NewClient(o)
	safe := strings.NewReplacer(" ", "_", "*", "_").Replace(name)
	var nb [4]byte
	_, _ = rand.Read(nb[:])
	c := &redisChannel{url: u, tls: o.TLSConfig, rdb: rdb, key: redis.KeyPrefix + "co-" + hex.EncodeToString(nb[:]) + ":" + safe}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.XGroupCreateMkStream(cctx, c.key, coservice.DurableName, "0").Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("XGROUP CREATE %s %s 0 MKSTREAM on %s: %s", c.key, coservice.DurableName, o.Addr, scrub(err.Error(), o.Password))
	}
	return c, nil
}

func scrub(s, password string) string {
	if password != "" {
		s = strings.ReplaceAll(s, password, "xxxxx")
	}
	return s
}

// redisChannel is one rule's stream key, consumer group and proxies.
type redisChannel struct {
	url *url.URL
	tls *tls.Config // toward a rediss:// server; nil: plain
	rdb *goredis.Client
	key string
	proxies
}

func (c *redisChannel) Env(worker string) (map[string]string, error) {
	addr, err := c.addr(worker, func(hook func() coservice.Hook, nextID func() int) (*relay, error) {
		var dial func(string) (net.Conn, error)
		if c.tls != nil {
			dial = tlsDial(c.tls)
		}
		w, err := startRESP(worker, c.url.Host, c.key, dial, hook, nextID)
		if err != nil {
			return nil, err
		}
		return w.relay, nil
	})
	if err != nil {
		return nil, fmt.Errorf("starting the proxy for %s: %w", worker, err)
	}
	pu := *c.url // the server's credentials and database, the proxy's address
	pu.Host = addr
	pu.Scheme = "redis" // the proxy speaks plain text to the service (tls.go)
	return map[string]string{
		coservice.EnvBroker:   coservice.BrokerRedis,
		coservice.EnvRedisURL: pu.String(),
		coservice.EnvStream:   c.key,
		coservice.EnvGroup:    coservice.DurableName,
	}, nil
}

// Publish is an XADD of the message's fields; the entry id is the sequence
// (RedisSeq). Redis has no de-dupe here: dup is always false.
func (c *redisChannel) Publish(ctx context.Context, m mq.Message) (uint64, bool, error) {
	vals := []any{coservice.RedisFieldID, m.ID, coservice.RedisFieldPayload, string(m.Payload)}
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals = append(vals, coservice.RedisHeaderPrefix+k, m.Headers[k])
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := c.rdb.XAdd(pctx, &goredis.XAddArgs{Stream: c.key, NoMkStream: true, Values: vals}).Result()
	if err != nil {
		return 0, false, err
	}
	seq, ok := RedisSeq(id)
	if !ok {
		return 0, false, fmt.Errorf("XADD returned the entry id %q, which the kit cannot number", id)
	}
	return seq, false, nil
}

// Outstanding is the group's pending entries (XPENDING) plus the entries
// after its last delivered id (never read by the group).
func (c *redisChannel) Outstanding(ctx context.Context) (int, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := c.rdb.XPending(ictx, c.key, coservice.DurableName).Result()
	if err != nil {
		return 0, err
	}
	groups, err := c.rdb.XInfoGroups(ictx, c.key).Result()
	if err != nil {
		return 0, err
	}
	last := "0-0"
	for _, g := range groups {
		if g.Name == coservice.DurableName {
			last = g.LastDeliveredID
		}
	}
	unread, err := c.rdb.XRangeN(ictx, c.key, "("+last, "+", 1000).Result()
	if err != nil {
		return 0, err
	}
	return int(p.Count) + len(unread), nil
}

// Close stops the proxies and deletes the stream key (its group and
// pending list with it).
func (c *redisChannel) Close() error {
	errs := []error{c.closeAll()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.rdb.Del(ctx, c.key).Err(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.rdb.Close())
	return errors.Join(errs...)
}

// RedisSeq numbers a stream entry id ("<ms>-<n>") as one uint64, in the
// ids' order, so Event.Seq is the same kind of number on every broker.
func RedisSeq(id string) (uint64, bool) {
	ms, n, ok := strings.Cut(id, "-")
	if !ok {
		return 0, false
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(n, 10, 64)
	if err1 != nil || err2 != nil || b >= 1_000_000 || a > 1<<44 {
		return 0, false
	}
	return a*1_000_000 + b, true
}
