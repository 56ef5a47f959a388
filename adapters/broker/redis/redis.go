// Package redis is the broker/redis target: mq.Broker over Redis Streams
// (github.com/redis/go-redis/v9), against any redis-server reachable by URL
// (redis://[user:password@]host:port/db) or one in a container.
//
// The mapping, and what Redis does not have (seed 002, section 六: each
// broker has its own acknowledgement words):
//
//   - a topic is a stream key, "onceproof-tck:<run>:<topic>", so on a shared
//     server the kit only ever touches keys of its own run; DeleteTopic
//     removes the key and its groups with it;
//   - a consumer group is a stream consumer group (XGROUP CREATE ... 0
//     MKSTREAM), a member a consumer of its own name on its own connection;
//   - Fetch first claims the group's entries idle longer than the ack wait
//     (XAUTOCLAIM: the kit's ack wait is Redis's min-idle-time, which is all
//     the redelivery Redis has), then reads new ones (XREADGROUP >);
//     Attempt is the entry's delivery counter (XPENDING);
//   - Ack is XACK, confirmed by its reply (one entry removed from the
//     pending list); the entry stays in the stream (limits retention only);
//   - InProgress re-claims the entry for the same consumer (XCLAIM ...
//     JUSTID, min-idle 0), which resets its idle time without raising the
//     delivery counter, only while that consumer still holds it;
//   - Nak, Term and max-deliver: Redis Streams has none (the capabilities
//     say so, the rules needing them are not-applicable);
//   - producer de-dupe only where the server has XADD IDMP (Redis 8.6+),
//     found by asking the server (Probe), never from its version string.
package redis

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/mq"
)

// KeyPrefix starts every key the kit creates.
const KeyPrefix = "onceproof-tck:"

// DefaultDedupeWindow is the IDMP-DURATION the kit gives its streams on a
// server with IDMP: short, so a run that must watch the window pass stays
// quick (Redis's own default is 100 s; the setting is in whole seconds).
const DefaultDedupeWindow = 2 * time.Second

// producerID is the IDMP producer id of the kit's publishes.
const producerID = "onceproof-tck"

// Field names of a stored message.
const (
	fieldID      = "id"
	fieldPayload = "payload"
	headerPrefix = "h:"
)

// Options tune a handle.
type Options struct {
	// Run is this target's run id: every key is KeyPrefix+Run+":"+topic.
	Run string
	// IDMP: the server has XADD IDMP (from Probe); publishes use it.
	IDMP bool
	// DedupeWindow is the IDMP-DURATION of the kit's streams when IDMP is
	// set (default DefaultDedupeWindow, whole seconds).
	DedupeWindow time.Duration
	// Poll is how often a waiting Fetch looks again for entries idle past
	// the ack wait (default 20ms): the precision of a redelivery.
	Poll time.Duration
	// ClaimJustID claims idle entries with XAUTOCLAIM JUSTID and reads
	// their bodies with XRANGE, which leaves the delivery counter where it
	// was. Only a mutant wants this.
	ClaimJustID bool
	// Hook, when set, is added to every client the handle opens (the
	// handle's own and each member's): it stands for a proxy between the
	// kit and the server that may rewrite replies. Only a mutant wants this.
	Hook goredis.Hook
	// TLS, when set, verifies a rediss:// server with the run's material
	// (tck run --tls-ca; docs/tls.md); a redis:// URL stays plain.
	TLS *tls.Config
}

func (o Options) withDefaults() Options {
	if o.DedupeWindow <= 0 {
		o.DedupeWindow = DefaultDedupeWindow
	}
	if o.DedupeWindow < time.Second {
		o.DedupeWindow = time.Second
	}
	o.DedupeWindow = o.DedupeWindow.Round(time.Second)
	if o.Poll <= 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.Run == "" {
		o.Run = NewRun()
	}
	return o
}

// NewRun is a fresh run id.
func NewRun() string { return nonce() }

// Broker is mq.Broker over one go-redis client (plus one per consumer
// member).
type Broker struct {
	url  string
	opts Options
	rdb  *goredis.Client

	mu      sync.Mutex
	members []*consumer
}

var (
	_ mq.Broker           = (*Broker)(nil)
	_ mq.PendingInspector = (*Broker)(nil)
	_ mq.Trimmer          = (*Broker)(nil)
)

// Connect opens a handle on the server at url and checks it answers. It
// does not check what the server can do: Probe does, once per target.
// Errors never carry the password.
func Connect(ctx context.Context, url string, opts Options) (*Broker, error) {
	rdb, err := dialHooked(ctx, url, opts.Hook, opts.TLS)
	if err != nil {
		return nil, err
	}
	return &Broker{url: url, opts: opts.withDefaults(), rdb: rdb}, nil
}

// dial opens a client on url and pings it.
func dial(ctx context.Context, url string, tlsCfg *tls.Config) (*goredis.Client, error) {
	return dialHooked(ctx, url, nil, tlsCfg)
}

// dialHooked is dial with hook (nil: none) on the client.
func dialHooked(ctx context.Context, url string, hook goredis.Hook, tlsCfg *tls.Config) (*goredis.Client, error) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("not a Redis URL (want redis://[user:password@]host:port/db): %s", scrub(err.Error(), url))
	}
	if o.TLSConfig != nil && tlsCfg != nil {
		// rediss://: go-redis's config (the URL's host as the name) with
		// the run's CA and client certificate.
		c := tlsCfg.Clone()
		if c.ServerName == "" {
			c.ServerName = o.TLSConfig.ServerName
		}
		o.TLSConfig = c
	}
	o.ClientName = "onceproof-tck"
	o.DialTimeout = 5 * time.Second
	o.MaxRetries = -1 // a retried XADD or XACK would hide what the server did
	o.DialerRetries = 1
	o.PoolSize = 4
	o.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(o)
	if hook != nil {
		rdb.AddHook(hook)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		msg := scrub(err.Error(), url)
		if strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") {
			return nil, fmt.Errorf("the Redis server at %s refused the login: %s", o.Addr, msg)
		}
		return nil, fmt.Errorf("cannot reach Redis at %s: %s", o.Addr, msg)
	}
	return rdb, nil
}

// scrub removes the URL's password from an error text.
func scrub(s, url string) string {
	if o, err := goredis.ParseURL(url); err == nil && o.Password != "" {
		s = strings.ReplaceAll(s, o.Password, "xxxxx")
	}
	return s
}

// Key is the stream key of topic.
func (b *Broker) Key(topic string) string { return KeyPrefix + b.opts.Run + ":" + topic }

// Client is the handle's go-redis client (mutants put their defect next to
// the adapter's commands with it).
func (b *Broker) Client() *goredis.Client { return b.rdb }

// Capabilities is what Redis Streams has.
func (b *Broker) Capabilities() mq.Capabilities { return capabilities(b.opts) }

func capabilities(o Options) mq.Capabilities {
	c := mq.Capabilities{
		AckWait: true, ConfirmedAck: true, InProgress: true,

		Retentions: []mq.Retention{mq.Limits},
	}
	if o.IDMP {
		c.DedupeWindow = o.withDefaults().DedupeWindow
	}
	return c
}

// CreateTopic creates the stream key, empty (an entry added and deleted),
// and on a server with IDMP sets its de-dupe window.
func (b *Broker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if cfg.Retention == mq.WorkQueue {
		return fmt.Errorf("%w: work-queue retention: XACK leaves the entry in the stream, and Redis Streams has no retention that deletes on ack", mq.ErrUnsupported)
	}
	key := b.Key(name)
	id, err := b.rdb.XAdd(ctx, &goredis.XAddArgs{Stream: key, Values: []any{"tck-create", "1"}}).Result()
	if err != nil {
		return fmt.Errorf("XADD %s: %w", key, err)
	}
	if err := b.rdb.XDel(ctx, key, id).Err(); err != nil {
		return fmt.Errorf("XDEL %s: %w", key, err)
	}
	if b.opts.IDMP {
		w := cfg.DedupeWindow
		if w <= 0 {
			w = b.opts.DedupeWindow
		}
		secs := max(int64(w.Round(time.Second)/time.Second), 1)
		if err := b.rdb.Do(ctx, "XCFGSET", key, "IDMP-DURATION", secs).Err(); err != nil {
			return fmt.Errorf("XCFGSET %s IDMP-DURATION %d: %w", key, secs, err)
		}
	}
	return nil
}

// DeleteTopic removes the stream key, its groups and pending lists.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	return b.rdb.Del(ctx, b.Key(name)).Err()
}

// Publish appends the message (XADD); with IDMP the message id is the
// idempotent id, and a duplicate inside the window returns the first
// entry's id without adding one.
func (b *Broker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	vals := []any{fieldID, m.ID, fieldPayload, string(m.Payload)}
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals = append(vals, headerPrefix+k, m.Headers[k])
	}
	a := &goredis.XAddArgs{Stream: b.Key(topic), NoMkStream: true, Values: vals}
	if b.opts.IDMP {
		a.ProducerID, a.IdempotentID = producerID, m.ID
	}
	id, err := b.rdb.XAdd(ctx, a).Result()
	if err != nil {
		if errors.Is(err, goredis.Nil) {
			return mq.PublishAck{}, fmt.Errorf("topic %s does not exist", topic)
		}
		return mq.PublishAck{}, err
	}
	return mq.PublishAck{Position: id}, nil
}

// ReadAll reads the whole stream (XRANGE - +).
func (b *Broker) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	msgs, err := b.rdb.XRange(ctx, b.Key(topic), "-", "+").Result()
	if err != nil {
		return nil, err
	}
	out := make([]mq.Stored, 0, len(msgs))
	for _, x := range msgs {
		out = append(out, mq.Stored{Message: decode(x), Position: x.ID})
	}
	return out, nil
}

// Pending reads the group's pending entries list (XPENDING extended form).
func (b *Broker) Pending(ctx context.Context, topic, group string) ([]mq.Pending, error) {
	var out []mq.Pending
	start := "-"
	for {
		ps, err := b.rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: b.Key(topic), Group: group, Start: start, End: "+", Count: 1000}).Result()
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, mq.Pending{Position: p.ID, Member: p.Consumer, Idle: p.Idle, Deliveries: int(p.RetryCount)})
		}
		if len(ps) < 1000 {
			return out, nil
		}
		start = "(" + ps[len(ps)-1].ID
	}
}

// Trim cuts the stream to its newest keep entries with exact trimming
// (XTRIM MAXLEN =), pending or not.
func (b *Broker) Trim(ctx context.Context, topic string, keep int) (mq.Trim, error) {
	key := b.Key(topic)
	n, err := b.rdb.XTrimMaxLen(ctx, key, int64(keep)).Result()
	t := mq.Trim{Command: fmt.Sprintf("XTRIM %s MAXLEN = %d", key, keep), Removed: int(n)}
	return t, err
}

// Consumer opens a member of cfg.Group on its own connection, creating the
// group (reading from the start of the stream) if it is new. MaxDeliver and
// Backoff have no Redis counterpart and are not applied (the capabilities
// say so).
func (b *Broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if cfg.Group == "" {
		return nil, errors.New("a consumer needs a group")
	}
	key := b.Key(topic)
	rdb, err := dialHooked(ctx, b.url, b.opts.Hook, b.opts.TLS)
	if err != nil {
		return nil, err
	}
	if err := rdb.XGroupCreateMkStream(ctx, key, cfg.Group, "0").Err(); err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		_ = rdb.Close()
		return nil, fmt.Errorf("XGROUP CREATE %s %s: %w", key, cfg.Group, err)
	}
	aw := cfg.AckWait
	if aw <= 0 {
		aw = 30 * time.Second
	}
	c := &consumer{b: b, rdb: rdb, key: key, group: cfg.Group, name: "member-" + nonce(), ackWait: aw}
	b.mu.Lock()
	b.members = append(b.members, c)
	b.mu.Unlock()
	return c, nil
}

// Close closes the handle and every member it opened.
func (b *Broker) Close() error {
	b.mu.Lock()
	ms := b.members
	b.members = nil
	b.mu.Unlock()
	for _, c := range ms {
		_ = c.Close()
	}
	return b.rdb.Close()
}

// consumer is one member: a consumer name in the group, on its own client.
type consumer struct {
	b       *Broker
	rdb     *goredis.Client
	key     string
	group   string
	name    string
	ackWait time.Duration

	mu        sync.Mutex
	emptyLook time.Time // when the latest claim that found nothing was sent

	closeOnce sync.Once
}

// Fetch claims entries idle past the ack wait, then reads new ones; it
// waits up to wait for the first, looking again every Poll.
func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	if max <= 0 {
		max = 1
	}
	deadline := time.Now().Add(wait)
	for {
		ds, err := c.claim(ctx, max)
		if err != nil || len(ds) > 0 {
			return ds, err
		}
		block := min(c.b.opts.Poll, time.Until(deadline))
		if block < time.Millisecond {
			block = time.Millisecond
		}
		streams, err := c.rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{
			Group: c.group, Consumer: c.name, Streams: []string{c.key, ">"}, Count: int64(max), Block: block,
		}).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, err
		}
		for _, s := range streams {
			for _, x := range s.Messages {
				// A new entry's first delivery: the counter is 1.
				ds = append(ds, c.delivery(x, 1))
			}
		}
		if len(ds) > 0 || !time.Now().Before(deadline) {
			return ds, nil
		}
	}
}

// claim takes up to max entries of the group idle longer than the ack
// wait (XAUTOCLAIM from the start of the pending list) and reads their
// delivery counters.
func (c *consumer) claim(ctx context.Context, max int) ([]mq.Delivery, error) {
	sent := time.Now()
	var msgs []goredis.XMessage
	start := "0-0"
	for range 4 {
		a := &goredis.XAutoClaimArgs{Stream: c.key, Group: c.group, Consumer: c.name, MinIdle: c.ackWait, Start: start, Count: int64(max - len(msgs))}
		var got []goredis.XMessage
		var next string
		var err error
		if c.b.opts.ClaimJustID {
			got, next, err = c.claimJustID(ctx, a)
		} else {
			got, next, err = c.rdb.XAutoClaim(ctx, a).Result()
		}
		if err != nil {
			return nil, err
		}
		for _, x := range got {
			if x.Values != nil {
				msgs = append(msgs, x)
			}
		}
		if next == "0-0" || len(msgs) >= max {
			break
		}
		start = next
	}
	c.mu.Lock()
	before := c.emptyLook
	if len(msgs) == 0 {
		c.emptyLook = sent
	}
	c.mu.Unlock()
	if len(msgs) == 0 {
		return nil, nil
	}
	counts, err := c.counters(ctx, msgs)
	if err != nil {
		return nil, err
	}
	ds := make([]mq.Delivery, 0, len(msgs))
	for _, x := range msgs {
		d := c.delivery(x, counts[x.ID])
		d.lookedBefore = before
		ds = append(ds, d)
	}
	return ds, nil
}

// claimJustID is a claim that leaves the delivery counter alone.
func (c *consumer) claimJustID(ctx context.Context, a *goredis.XAutoClaimArgs) ([]goredis.XMessage, string, error) {
	ids, next, err := c.rdb.XAutoClaimJustID(ctx, a).Result()
	if err != nil {
		return nil, "", err
	}
	var out []goredis.XMessage
	for _, id := range ids {
		xs, err := c.rdb.XRange(ctx, c.key, id, id).Result()
		if err != nil {
			return nil, "", err
		}
		out = append(out, xs...)
	}
	return out, next, nil
}

// counters reads the delivery counter of each claimed entry (XPENDING id id).
func (c *consumer) counters(ctx context.Context, msgs []goredis.XMessage) (map[string]int, error) {
	pipe := c.rdb.Pipeline()
	cmds := make([]*goredis.XPendingExtCmd, len(msgs))
	for i, x := range msgs {
		cmds[i] = pipe.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: c.key, Group: c.group, Start: x.ID, End: x.ID, Count: 1})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	out := map[string]int{}
	for _, cmd := range cmds {
		for _, p := range cmd.Val() {
			out[p.ID] = int(p.RetryCount)
		}
	}
	return out, nil
}

func (c *consumer) delivery(x goredis.XMessage, attempt int) *delivery {
	return &delivery{c: c, msg: decode(x), pos: x.ID, attempt: attempt}
}

// Close ends the member as a crash would: its connection closes, what it
// holds stays in the group's pending list until another member claims it.
func (c *consumer) Close() error {
	var err error
	c.closeOnce.Do(func() { err = c.rdb.Close() })
	return err
}

type delivery struct {
	c       *consumer
	msg     mq.Message
	pos     string
	attempt int

	lookedBefore time.Time
}

// LookedBefore is when this member last asked for claimable entries and
// found none before the claim that brought this entry (zero for a first
// delivery). On Redis the client's own claim redelivers: the entry became
// claimable after that look, and a loaded host that spaces the looks out
// delays the redelivery by the kit's doing, not the server's.
func (d *delivery) LookedBefore() time.Time { return d.lookedBefore }

func (d *delivery) Message() mq.Message { return d.msg }
func (d *delivery) Attempt() int        { return d.attempt }
func (d *delivery) Position() string    { return d.pos }

// Ack is XACK; it is confirmed when the reply says one entry left the
// pending list.
func (d *delivery) Ack(ctx context.Context) error {
	n, err := d.c.rdb.XAck(ctx, d.c.key, d.c.group, d.pos).Result()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("XACK %s %s %s removed %d entries: %w (acknowledged before, or its key deleted)", d.c.key, d.c.group, d.pos, n, mq.ErrNotPending)
	}
	return nil
}

// Nak: Redis Streams has no negative acknowledgement.
func (d *delivery) Nak(context.Context, time.Duration) error {
	return fmt.Errorf("%w: Redis Streams has no negative acknowledgement; an unacknowledged entry comes back only when a consumer claims it after its idle time", mq.ErrUnsupported)
}

// Term: Redis Streams cannot stop the redelivery of one entry.
func (d *delivery) Term(context.Context) error {
	return fmt.Errorf("%w: Redis Streams has no terminate; an entry stays claimable until XACK (or XDEL) removes it", mq.ErrUnsupported)
}

// inProgress re-claims the entry for its holder, atomically: only while
// this consumer still holds it (another member may have claimed it after
// its idle time). XCLAIM with min-idle 0 resets the idle time; JUSTID
// leaves the delivery counter alone.
var inProgress = goredis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 then return -1 end
if p[1][2] ~= ARGV[2] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
`)

// InProgress resets the entry's idle time, so the ack wait starts again.
func (d *delivery) InProgress(ctx context.Context) error {
	n, err := inProgress.Run(ctx, d.c.rdb, []string{d.c.key}, d.c.group, d.c.name, d.pos).Int()
	if err != nil {
		return err
	}
	switch n {
	case -1:
		return fmt.Errorf("entry %s is no longer pending in group %s: %w", d.pos, d.c.group, mq.ErrNotPending)
	case 0:
		return fmt.Errorf("entry %s was claimed by another member of group %s", d.pos, d.c.group)
	}
	return nil
}

// decode turns a stream entry back into a message.
func decode(x goredis.XMessage) mq.Message {
	m := mq.Message{}
	for k, v := range x.Values {
		s, _ := v.(string)
		switch {
		case k == fieldID:
			m.ID = s
		case k == fieldPayload:
			m.Payload = []byte(s)
		case strings.HasPrefix(k, headerPrefix):
			if m.Headers == nil {
				m.Headers = map[string]string{}
			}
			m.Headers[strings.TrimPrefix(k, headerPrefix)] = s
		}
	}
	return m
}

func nonce() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
