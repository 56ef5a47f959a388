// Package kafka is the broker/kafka target: mq.Broker over Apache Kafka
// through franz-go (kgo, kadm), against an embedded kfake cluster
// (StartEmbedded; an emulator, labelled so in every report) or any cluster
// reachable at a bootstrap address (Connect).
//
// The mapping of the kit's vocabulary (seed 002, 六: "Kafka 分区 offset/组进度：
// 消费者可保存已读位置，在保留期内重读"):
//
//   - a topic is a Kafka topic the kit creates through kadm, named
//     "<prefix>.<run>.<name>" (Prefix, Run), with one partition so its order
//     is total, and deletes afterwards; it touches no other topic;
//   - Publish is a synchronous produce on the handle's idempotent producer
//     (one producer session per handle; Producer starts more); the message
//     id travels as the record key and the header onceproof-id;
//   - Consumer is a new member of a consumer group on its own client, with
//     auto-commit disabled; it returns once the member has joined the group;
//     the group's Kafka name is in the kit's namespace too, and it is
//     deleted with the topic;
//   - Ack commits that record's offset+1 for the group and returns once the
//     commit response confirmed it; Kafka has no per-message nak, term,
//     in-progress or delivery limit (those return mq.ErrUnsupported);
//   - Close is a crash: the member leaves without committing, and what it
//     was handed and did not commit is re-read by the member that owns the
//     partition after the rebalance;
//   - Attempt is counted by this handle: Kafka keeps no delivery counter, so
//     the adapter counts how often the members it opened for a group were
//     handed one offset.
//
// With Options.Share the handle's consumers are members of share groups
// instead (KIP-932; share.go: broker/kafka-share).
package kafka

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/mq"
)

// DefaultPrefix begins the name of every topic the kit creates.
const DefaultPrefix = "onceproof-tck"

// IDHeader carries the message id.
const IDHeader = "onceproof-id"

// Options tune a handle.
type Options struct {
	// Seeds are the bootstrap brokers, host:port.
	Seeds []string
	// User and Password, when set, authenticate with SASL Mechanism
	// (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; default PLAIN).
	User, Password, Mechanism string
	// Prefix and Run name the kit's topics: "<Prefix>.<Run>.<name>". Every
	// handle of one target shares them (default DefaultPrefix, a random run).
	Prefix, Run string
	// Timeout bounds connecting and each admin request (default 10s).
	Timeout time.Duration
	// Defects are a mutant's (zero: none).
	Defects Defects
	// Share, when set, makes every consumer a member of a share group
	// (KIP-932) with these declared settings (share.go).
	Share *Share
	// TLS, when set, is used on every connection (tck run --tls-ca, or
	// kafka://...?tls=true with the system's roots; docs/tls.md); SASL
	// then runs over it. kgo verifies each broker's host unless ServerName
	// is set.
	TLS *tls.Config

	dial           func(ctx context.Context, network, host string) (net.Conn, error) // the kit's own dialer (dropreply.go)
	produceTimeout time.Duration                                                     // 0: kgo's default
}

// Defects are the deliberate faults a mutant puts in the client path; the
// zero value is the healthy client.
type Defects struct {
	// NoIdempotence produces without the idempotent producer: a retried
	// batch is appended again.
	NoIdempotence bool
	// CommitShift is added to the offset a commit stores (-1: the record's
	// own offset instead of the next one).
	CommitShift int64
	// NoPersistence runs a rule's own cluster without a data directory:
	// everything acknowledged is gone after a restart.
	NoPersistence bool
	// ShareAutoAccept accepts every share-group record as it is handed
	// out, before it was processed.
	ShareAutoAccept bool
	// ShareForgetCount releases a share-group record by producing it
	// again and accepting the original: its delivery count never rises.
	ShareForgetCount bool
	// ShareLockNeverExpires runs the kit's kfake with a lock of an hour
	// while the target declares the short one.
	ShareLockNeverExpires bool
	// ShareAckDeletes deletes the records up to an accepted one.
	ShareAckDeletes bool
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Run == "" {
		o.Run = NewRun()
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Mechanism == "" {
		o.Mechanism = "PLAIN"
	}
	return o
}

// NewRun is a fresh run id for topic names.
func NewRun() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Broker is mq.Broker over one Kafka cluster: an admin client and an
// idempotent producer, plus one client per consumer member.
type Broker struct {
	opts  Options
	admin *kgo.Client
	adm   *kadm.Client
	prod  *producer

	mu       sync.Mutex
	attempts map[string]int             // group|topic|partition/offset -> times handed out
	groups   map[string]map[string]bool // topic -> groups of the members opened on it
	members  map[*consumer]bool
	closed   bool
}

var (
	_ mq.Broker        = (*Broker)(nil)
	_ mq.SessionBroker = (*Broker)(nil)
	_ mq.GroupOffsets  = (*Broker)(nil)
)

// Caps is what the adapter declares: Kafka's model, in the kit's words.
func Caps() mq.Capabilities {
	return mq.Capabilities{
		ConfirmedAck:        true,
		RebalanceRedelivery: true,

		Retentions: []mq.Retention{mq.Limits},
	}
}

// baseOpts are the options of every client of the handle.
func (o Options) baseOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Seeds...),
		kgo.ClientID("onceproof-tck"),
		kgo.DialTimeout(o.Timeout),
		kgo.RetryTimeout(o.Timeout),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}
	opts = append(opts, o.dialOpts()...)
	if o.User != "" {
		m, err := mechanism(o.Mechanism, o.User, o.Password)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func mechanism(name, user, pass string) (sasl.Mechanism, error) {
	switch strings.ToUpper(name) {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("unknown SASL mechanism %q (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", name)
}

// Connect opens a handle on the cluster at opts.Seeds and checks that a
// broker answers (an ApiVersions round trip through the admin client). Its
// errors name no password.
func Connect(ctx context.Context, opts Options) (*Broker, error) {
	opts = opts.withDefaults()
	if len(opts.Seeds) == 0 {
		return nil, errors.New("no bootstrap broker")
	}
	base, err := opts.baseOpts()
	if err != nil {
		return nil, err
	}
	admin, err := kgo.NewClient(base...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := admin.Ping(pctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("no broker of %s answered: %w", strings.Join(opts.Seeds, ","), err)
	}
	b := &Broker{opts: opts, admin: admin, adm: kadm.NewClient(admin), attempts: map[string]int{}, groups: map[string]map[string]bool{}, members: map[*consumer]bool{}}
	p, err := b.newProducer()
	if err != nil {
		admin.Close()
		return nil, err
	}
	b.prod = p
	return b, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// TopicName is the Kafka topic behind the kit's topic name.
func (b *Broker) TopicName(name string) string { return b.opts.TopicName(name) }

// TopicName is the Kafka topic behind the kit's topic name for these
// options (their Run must be set).
func (o Options) TopicName(name string) string {
	prefix := o.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "." + o.Run + "." + unsafeName.ReplaceAllString(name, "_")
}

func (b *Broker) adminCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.opts.Timeout)
}

// CreateTopic creates a one-partition topic. Kafka has no producer de-dupe
// window (cfg.DedupeWindow is ignored) and no work-queue retention.
func (b *Broker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if cfg.Retention != "" && cfg.Retention != mq.Limits {
		return fmt.Errorf("%w: Kafka keeps records by retention time and size only, never removed by a commit (retention %q)", mq.ErrUnsupported, cfg.Retention)
	}
	rf := int16(-1) // the cluster's default.replication.factor
	if cfg.Replicas > 0 {
		rf = int16(cfg.Replicas)
	}
	actx, cancel := b.adminCtx(ctx)
	defer cancel()
	kt := b.TopicName(name)
	if _, err := b.adm.CreateTopic(actx, 1, rf, nil, kt); err != nil {
		return fmt.Errorf("creating topic %s: %w", kt, err)
	}
	// Metadata can lag the creation on a real cluster: wait until a
	// broker reports the partition's leader.
	errNoLeader := errors.New("no leader yet")
	if err := poll.Until(actx, 50*time.Millisecond, 50*time.Millisecond, func() error {
		md, err := b.adm.Metadata(actx, kt)
		if err != nil {
			return err
		}
		if t, ok := md.Topics[kt]; ok && t.Err == nil && len(t.Partitions) > 0 && t.Partitions[0].Leader >= 0 {
			return nil
		}
		return errNoLeader
	}); err != nil {
		return fmt.Errorf("topic %s created, but no leader was reported: %w", kt, actx.Err())
	}
	return nil
}

// DeleteTopic deletes the kit's topic and the groups this handle opened
// members of on it (a group that still has members stays).
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	actx, cancel := b.adminCtx(ctx)
	defer cancel()
	_, err := b.adm.DeleteTopic(actx, b.TopicName(name))
	b.mu.Lock()
	var groups []string
	for g := range b.groups[name] {
		groups = append(groups, b.GroupName(g))
	}
	delete(b.groups, name)
	b.mu.Unlock()
	if len(groups) > 0 {
		_, _ = b.adm.DeleteGroups(actx, groups...)
	}
	return err
}

// GroupName is the Kafka consumer group behind the kit's group name: in the
// kit's namespace, like its topics, so a shared cluster's groups are never
// touched.
func (b *Broker) GroupName(group string) string { return b.opts.TopicName(group) }

// usedGroup notes that the handle opened a member of group on topic.
func (b *Broker) usedGroup(topic, group string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.groups[topic] == nil {
		b.groups[topic] = map[string]bool{}
	}
	b.groups[topic][group] = true
}

// Publish produces m on the handle's own producer session.
func (b *Broker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return b.prod.Publish(ctx, topic, m)
}

// Producer starts a new producer session: a client of its own, so a new
// producer id.
func (b *Broker) Producer(context.Context) (mq.Producer, error) { return b.newProducer() }

func (b *Broker) newProducer() (*producer, error) {
	opts, err := b.opts.baseOpts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	if b.opts.Defects.NoIdempotence {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return &producer{b: b, cl: cl}, nil
}

// producer is one producer session.
type producer struct {
	b  *Broker
	cl *kgo.Client
}

func (p *producer) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	r := &kgo.Record{Topic: p.b.TopicName(topic), Key: []byte(m.ID), Value: m.Payload,
		Headers: []kgo.RecordHeader{{Key: IDHeader, Value: []byte(m.ID)}}}
	for k, v := range m.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	if err := p.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return mq.PublishAck{}, err
	}
	return mq.PublishAck{Position: Position(r.Partition, r.Offset)}, nil
}

func (p *producer) Close() error {
	p.cl.Close()
	return nil
}

// Position is how the adapter writes partition and offset: "0/42".
func Position(partition int32, offset int64) string {
	return fmt.Sprintf("%d/%d", partition, offset)
}

// ParsePosition reads a Position.
func ParsePosition(s string) (int32, int64, error) {
	ps, os, ok := strings.Cut(s, "/")
	p, err1 := strconv.ParseInt(ps, 10, 32)
	o, err2 := strconv.ParseInt(os, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("position %q: want PARTITION/OFFSET", s)
	}
	return int32(p), o, nil
}

// Consumer opens a new member of cfg.Group on its own client, and returns
// once the member has joined the group (so the member opened first owns the
// partition). AckWait and Backoff have no Kafka counterpart and are
// ignored; a MaxDeliver limit is refused.
func (b *Broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if cfg.MaxDeliver > 0 {
		return nil, fmt.Errorf("%w: Kafka has no delivery limit (MaxDeliver %d)", mq.ErrUnsupported, cfg.MaxDeliver)
	}
	opts, err := b.opts.baseOpts()
	if err != nil {
		return nil, err
	}
	joined := make(chan struct{})
	var once sync.Once
	opts = append(opts,
		kgo.ConsumerGroup(b.GroupName(cfg.Group)),
		kgo.ConsumeTopics(b.TopicName(topic)),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { once.Do(func() { close(joined) }) }),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	c := &consumer{b: b, cl: cl, group: cfg.Group}
	b.usedGroup(topic, cfg.Group)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		cl.Close()
		return nil, errors.New("the broker handle is closed")
	}
	b.members[c] = true
	b.mu.Unlock()
	// A member joins in the background; wait until it has an assignment
	// (an empty one, for a member beside the partition's owner) or the
	// join is in doubt.
	jctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	select {
	case <-joined:
		return c, nil
	case <-jctx.Done():
	}
	if _, gen := cl.GroupMetadata(); gen >= 0 {
		return c, nil
	}
	_ = c.Close()
	return nil, fmt.Errorf("member of group %s did not join within %s", cfg.Group, b.opts.Timeout)
}

// consumer is one member of a group.
type consumer struct {
	b     *Broker
	cl    *kgo.Client
	group string
	once  sync.Once
}

func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	fs := c.cl.PollRecords(wctx, max)
	cancel()
	if fs.IsClientClosed() {
		return nil, errors.New("the member is closed")
	}
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		return nil, fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	if len(fs.Records()) == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var out []mq.Delivery
	for _, r := range fs.Records() {
		out = append(out, &delivery{c: c, r: r, attempt: c.b.handed(c.group, r)})
	}
	return out, nil
}

// handed counts one more hand-out of r to a member of group.
func (b *Broker) handed(group string, r *kgo.Record) int {
	k := group + "|" + r.Topic + "|" + Position(r.Partition, r.Offset)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts[k]++
	return b.attempts[k]
}

// Close leaves the group without committing: a crash, as far as the group's
// progress goes.
func (c *consumer) Close() error {
	c.once.Do(func() {
		c.cl.Close()
		c.b.mu.Lock()
		delete(c.b.members, c)
		c.b.mu.Unlock()
	})
	return nil
}

// delivery is one record handed to a member.
type delivery struct {
	c       *consumer
	r       *kgo.Record
	attempt int
}

func (d *delivery) Message() mq.Message { return message(d.r) }
func (d *delivery) Attempt() int        { return d.attempt }
func (d *delivery) Position() string    { return Position(d.r.Partition, d.r.Offset) }

// Ack commits the record's offset+1 for the group and waits for the commit
// response.
func (d *delivery) Ack(ctx context.Context) error {
	off := d.r.Offset + 1 + d.c.b.opts.Defects.CommitShift
	var err error
	d.c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{
		d.r.Topic: {d.r.Partition: {Epoch: d.r.LeaderEpoch, Offset: off}},
	}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
		err = commitErr(resp, e)
	})
	return err
}

// commitErr is the commit's error: the request's, or the first partition's.
func commitErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				return fmt.Errorf("commit %s/%d: %w", t.Topic, p.Partition, e)
			}
		}
	}
	return nil
}

var errNoNak = fmt.Errorf("%w: Kafka has no per-message nak, term or in-progress; a record comes back only after a rebalance or a seek", mq.ErrUnsupported)

func (d *delivery) Nak(context.Context, time.Duration) error { return errNoNak }
func (d *delivery) Term(context.Context) error               { return errNoNak }
func (d *delivery) InProgress(context.Context) error         { return errNoNak }

func message(r *kgo.Record) mq.Message {
	m := mq.Message{ID: string(r.Key), Payload: r.Value}
	for _, h := range r.Headers {
		if h.Key == IDHeader {
			m.ID = string(h.Value)
			continue
		}
		if m.Headers == nil {
			m.Headers = map[string]string{}
		}
		m.Headers[h.Key] = string(h.Value)
	}
	return m
}

// ReadAll reads the topic's partition from its start to its end offset on a
// client of its own (no group).
func (b *Broker) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	kt := b.TopicName(topic)
	actx, cancel := b.adminCtx(ctx)
	defer cancel()
	starts, err := b.adm.ListStartOffsets(actx, kt)
	if err == nil {
		err = starts.Error()
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		// A definite answer: the topic is gone (mq.ErrNotFound).
		return nil, fmt.Errorf("start offsets of %s: %w: %w", kt, mq.ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("start offsets of %s: %w", kt, err)
	}
	ends, err := b.adm.ListEndOffsets(actx, kt)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", kt, err)
	}
	parts := map[int32]kgo.Offset{}
	want := 0
	ends.Each(func(l kadm.ListedOffset) {
		s, _ := starts.Lookup(kt, l.Partition)
		if l.Offset > s.Offset {
			parts[l.Partition] = kgo.NewOffset().At(s.Offset)
			want += int(l.Offset - s.Offset)
		}
	})
	if want == 0 {
		return nil, nil
	}
	opts, err := b.opts.baseOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{kt: parts}), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []mq.Stored
	for len(out) < want {
		fs := cl.PollFetches(actx)
		if err := actx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s back: %d of %d records: %w", kt, len(out), want, err)
		}
		for _, fe := range fs.Errors() {
			return nil, fmt.Errorf("reading %s back: %w", kt, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if e, ok := ends.Lookup(kt, r.Partition); ok && r.Offset < e.Offset {
				out = append(out, mq.Stored{Message: message(r), Position: Position(r.Partition, r.Offset)})
			}
		})
	}
	return out, nil
}

// Committed is the group's committed position on the topic's partition 0.
func (b *Broker) Committed(ctx context.Context, topic, group string) (string, error) {
	actx, cancel := b.adminCtx(ctx)
	defer cancel()
	resp, err := b.adm.FetchOffsets(actx, b.GroupName(group))
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return "", fmt.Errorf("committed offsets of group %s: %w", group, err)
	}
	o, ok := resp.Lookup(b.TopicName(topic), 0)
	if !ok || o.At < 0 {
		return "", nil
	}
	return Position(0, o.At), nil
}

// Reset commits position for the group (an admin commit, as
// kafka-consumer-groups --reset-offsets does; the group must be empty).
func (b *Broker) Reset(ctx context.Context, topic, group, position string) error {
	p, off, err := ParsePosition(position)
	if err != nil {
		return err
	}
	actx, cancel := b.adminCtx(ctx)
	defer cancel()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: b.TopicName(topic), Partition: p, At: off, LeaderEpoch: -1})
	resp, err := b.adm.CommitOffsets(actx, b.GroupName(group), os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("resetting group %s to %s: %w", group, position, err)
	}
	return nil
}

// Capabilities is what Kafka has, in the kit's words.
func (b *Broker) Capabilities() mq.Capabilities { return Caps() }

// Close closes the producer, every member still open and the admin client.
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	ms := make([]*consumer, 0, len(b.members))
	for c := range b.members {
		ms = append(ms, c)
	}
	b.mu.Unlock()
	for _, c := range ms {
		_ = c.Close()
	}
	_ = b.prod.Close()
	b.admin.Close()
	return nil
}
