package kafka

// This file is broker/kafka-share: consumption through a Kafka share group
// (KIP-932, "Queues for Kafka"), read from franz-go's kgo
// (pkg/kgo/consumer_share.go: ShareGroup, Record.Ack with AckAccept,
// AckRelease, AckReject, AckRenew; Record.DeliveryCount,
// Record.AcquisitionDeadline) and kfake (share_groups.go). The mapping:
//
//   - a member acquires each record it is handed under a lock of
//     group.share.record.lock.duration.ms: the ack wait. The lock is the
//     group's (the cluster's default or the group config), not a member's:
//     a consumer asking for another ack wait is refused;
//   - Ack is ACCEPT, Nak is RELEASE (redelivered at once: KIP-932 has no
//     delayed release, so a delay is refused), Term is REJECT (archived,
//     never delivered again), InProgress is RENEW (KIP-1222, Kafka 4.2);
//     each is flushed and confirmed by the broker's acknowledge response;
//   - Attempt is the broker's delivery count; at
//     group.share.delivery.count.limit the record is archived instead of
//     released: the max-deliver. The share-partition start offset (SPSO,
//     DescribeShareGroupOffsets) passing a record the kit neither accepted
//     nor rejected is the signal that it was archived at the limit;
//   - Close is a member that ends: kgo's leave releases what it held.
//
// kgo accepts, on the next poll, every record of the previous poll that was
// not acknowledged (consumer_share.go, finalizePreviousPoll: implicit
// acknowledgement). The kit's member must not: a Fetch while deliveries are
// still unsettled and under lock returns nothing until their lock ran out,
// and then releases them (what the broker did, or is about to do, when the
// lock expired) before it polls. The share-auto-accept mutant is kgo's
// default behaviour made immediate.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/mq"
)

// Share is what a share-group target declares: the group's settings as
// KIP-932 names them.
type Share struct {
	// LockDuration is group.share.record.lock.duration.ms (Kafka's default
	// 30 s): the ack wait.
	LockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit (Kafka's default
	// 5): the max-deliver.
	DeliveryLimit int
}

// KafkaShareDefaults are KIP-932's defaults.
var KafkaShareDefaults = Share{LockDuration: 30 * time.Second, DeliveryLimit: 5}

// KitShare is what the kit's own kfake runs with: a lock of seconds, so the
// timed rules take seconds, not half-minutes.
var KitShare = Share{LockDuration: 2 * time.Second, DeliveryLimit: 3}

// ShareCaps is what a share group has, in the kit's words: no delayed nak
// and no committed offset.
func ShareCaps() mq.Capabilities {
	return mq.Capabilities{
		AckWait:      true,
		ConfirmedAck: true,
		Term:         true,
		MaxDeliver:   true,
		InProgress:   true,

		ShareGroups: true,
		Retentions:  []mq.Retention{mq.Limits},
	}
}

// ShareBroker is a handle whose consumers are members of share groups. It
// holds the Kafka handle by name, not embedded: a share group keeps no
// committed offset, so ShareBroker must not implement mq.GroupOffsets
// (the broker suite finds mechanisms by type assertion).
type ShareBroker struct {
	k     *Broker
	share Share

	mu       sync.Mutex
	settled  map[string]bool // group|position the kit accepted or rejected
	earliest map[string]bool // groups set to share.auto.offset.reset=earliest
	members  map[*shareConsumer]bool
	n        int // members opened, for their client ids
}

var (
	_ mq.Broker            = (*ShareBroker)(nil)
	_ mq.AckedInspector    = (*ShareBroker)(nil)
	_ mq.MaxDeliverWatcher = (*ShareBroker)(nil)
)

// CreateTopic implements mq.Broker.
func (b *ShareBroker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	return b.k.CreateTopic(ctx, name, cfg)
}

// DeleteTopic implements mq.Broker.
func (b *ShareBroker) DeleteTopic(ctx context.Context, name string) error {
	return b.k.DeleteTopic(ctx, name)
}

// Publish implements mq.Broker.
func (b *ShareBroker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return b.k.Publish(ctx, topic, m)
}

// Producer implements mq.SessionBroker: producers are Kafka's own.
func (b *ShareBroker) Producer(ctx context.Context) (mq.Producer, error) { return b.k.Producer(ctx) }

// ReadAll implements mq.Broker.
func (b *ShareBroker) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	return b.k.ReadAll(ctx, topic)
}

// Capabilities is a share group's.
func (b *ShareBroker) Capabilities() mq.Capabilities { return ShareCaps() }

// Share is what the handle declares.
func (b *ShareBroker) Share() Share { return b.share }

func (b *ShareBroker) finished(group, pos string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[group+"|"+pos] = true
}

func (b *ShareBroker) unfinished(group, pos string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.settled, group+"|"+pos)
}

func (b *ShareBroker) finishedByKit(group, pos string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.settled[group+"|"+pos]
}

// startEarliest sets the group's share.auto.offset.reset to earliest before
// its first member joins (KIP-932's default is latest: a group would miss
// what was published before it joined). Group configs are unprefixed.
func (b *ShareBroker) startEarliest(ctx context.Context, group string) error {
	b.mu.Lock()
	done := b.earliest[group]
	b.mu.Unlock()
	if done {
		return nil
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	rr.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	actx, cancel := b.k.adminCtx(ctx)
	defer cancel()
	resp, err := req.RequestWith(actx, b.k.admin)
	if err == nil {
		for _, r := range resp.Resources {
			if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
				err = e
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting share.auto.offset.reset=earliest on share group %s: %w", group, err)
	}
	b.mu.Lock()
	b.earliest[group] = true
	b.mu.Unlock()
	return nil
}

// Consumer opens a new member of the share group cfg.Group. The lock and
// the delivery limit are the group's: a consumer asking for others is
// refused, as is a back-off list (KIP-932 has none).
func (b *ShareBroker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if cfg.AckWait > 0 && cfg.AckWait != b.share.LockDuration {
		return nil, fmt.Errorf("%w: a share group's ack wait is its group.share.record.lock.duration.ms (%s), not a member's choice (asked %s)", mq.ErrUnsupported, b.share.LockDuration, cfg.AckWait)
	}
	if cfg.MaxDeliver > 0 && cfg.MaxDeliver != b.share.DeliveryLimit {
		return nil, fmt.Errorf("%w: a share group's max-deliver is its group.share.delivery.count.limit (%d), not a member's choice (asked %d)", mq.ErrUnsupported, b.share.DeliveryLimit, cfg.MaxDeliver)
	}
	if len(cfg.Backoff) > 0 {
		return nil, fmt.Errorf("%w: KIP-932 has no back-off list: a released record is available at once, an unacknowledged one after the lock", mq.ErrUnsupported)
	}
	group := b.k.GroupName(cfg.Group)
	if err := b.startEarliest(ctx, group); err != nil {
		return nil, err
	}
	opts, err := b.k.opts.baseOpts()
	if err != nil {
		return nil, err
	}
	c := &shareConsumer{b: b, group: cfg.Group, topic: topic}
	b.mu.Lock()
	b.n++
	clientID := fmt.Sprintf("onceproof-tck-%s-share-%d", b.k.opts.Run, b.n)
	b.mu.Unlock()
	opts = append(opts,
		kgo.ClientID(clientID),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(b.k.TopicName(topic)),
		// One record a fetch, and no fetch outside a poll: a record is
		// acquired (its lock starts) only when the kit asks for one.
		kgo.ShareMaxRecords(1), kgo.ShareMaxRecordsStrict(),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ShareAckCallback(c.acked),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka share consumer: %w", err)
	}
	c.cl = cl
	b.k.usedGroup(topic, cfg.Group)
	b.mu.Lock()
	b.members[c] = true
	b.mu.Unlock()
	// A member joins in the background: wait until the group names it
	// with the topic assigned, so the member opened first is in the group
	// before anything is published.
	if err := b.joined(ctx, group, clientID); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// joined waits until share group lists the member with clientID and an
// assignment.
func (b *ShareBroker) joined(ctx context.Context, group, clientID string) error {
	actx, cancel := b.k.adminCtx(ctx)
	defer cancel()
	errNotYet := errors.New("not a member yet")
	err := poll.Until(actx, 20*time.Millisecond, 100*time.Millisecond, func() error {
		ds, err := b.k.adm.DescribeShareGroups(actx, group)
		if err != nil {
			return err
		}
		for _, m := range ds[group].Members {
			if m.ClientID == clientID && len(m.Assignment) > 0 {
				return nil
			}
		}
		return errNotYet
	})
	if err != nil {
		return fmt.Errorf("member of share group %s did not join within %s: %w", group, b.k.opts.Timeout, err)
	}
	return nil
}

// Close closes every member still open, then the handle.
func (b *ShareBroker) Close() error {
	b.mu.Lock()
	ms := make([]*shareConsumer, 0, len(b.members))
	for c := range b.members {
		ms = append(ms, c)
	}
	b.mu.Unlock()
	for _, c := range ms {
		_ = c.Close()
	}
	return b.k.Close()
}

// Acked says whether the group is done with position: the share-partition
// start offset lies past it. Past it a record is accepted or archived; one
// the kit never rejected and that was delivered fewer times than the limit
// can only have been accepted.
func (b *ShareBroker) Acked(ctx context.Context, topic, group, position string) (bool, error) {
	_, off, err := ParsePosition(position)
	if err != nil {
		return false, err
	}
	spso, err := b.startOffset(ctx, topic, group)
	if err != nil {
		return false, err
	}
	return spso > off, nil
}

// startOffset is the share-partition start offset of the group on the
// topic's partition 0; -1 when the group holds no state for it.
func (b *ShareBroker) startOffset(ctx context.Context, topic, group string) (int64, error) {
	actx, cancel := b.k.adminCtx(ctx)
	defer cancel()
	resp, err := b.k.adm.DescribeShareGroupOffsets(actx, b.k.GroupName(group))
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1, nil // no member joined yet
	}
	if err != nil {
		return 0, fmt.Errorf("share-partition start offset of group %s: %w", group, err)
	}
	d, ok := resp[b.k.GroupName(group)]
	if !ok {
		return -1, nil
	}
	o, ok := d.Offsets.Lookup(b.k.TopicName(topic), 0)
	if !ok {
		return -1, nil
	}
	if o.Err != nil {
		return 0, fmt.Errorf("share-partition start offset of group %s: %w", group, o.Err)
	}
	return o.StartOffset, nil
}

// WatchMaxDeliver sends the position of every record the share-partition
// start offset passes that the kit neither accepted nor rejected: a record
// archived at the delivery limit (KIP-932 keeps no dead-letter topic before
// Kafka 4.4; the archived record stays in the log, unseen by the group).
func (b *ShareBroker) WatchMaxDeliver(ctx context.Context, topic, group string) (<-chan string, error) {
	from, err := b.startOffset(ctx, topic, group)
	if err != nil {
		return nil, err
	}
	from = max(from, 0)
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		_ = poll.Until(ctx, 50*time.Millisecond, 100*time.Millisecond, func() error {
			spso, err := b.startOffset(ctx, topic, group)
			for ; err == nil && from < spso; from++ {
				if pos := Position(0, from); !b.finishedByKit(group, pos) {
					select {
					case ch <- pos:
					case <-ctx.Done():
						return nil
					}
				}
			}
			return errKeepWatching
		})
	}()
	return ch, nil
}

var errKeepWatching = errors.New("watching")

// shareConsumer is one member of a share group.
type shareConsumer struct {
	b            *ShareBroker
	cl           *kgo.Client
	group, topic string
	once         sync.Once

	mu   sync.Mutex
	held []*shareDelivery // handed out by the last poll

	ackMu  sync.Mutex // one flush at a time, so its errors are its own
	errMu  sync.Mutex
	ackErr error
}

// acked is kgo's ShareAckCallback: the broker's answer to acknowledgements.
func (c *shareConsumer) acked(_ *kgo.Client, rs kgo.ShareAckResults) {
	if err := rs.Error(); err != nil {
		c.errMu.Lock()
		c.ackErr = err
		c.errMu.Unlock()
	}
}

// flush sends what was marked and returns the broker's answer.
func (c *shareConsumer) flush(ctx context.Context) error {
	c.errMu.Lock()
	c.ackErr = nil
	c.errMu.Unlock()
	if err := c.cl.FlushAcks(ctx); err != nil {
		return fmt.Errorf("acknowledgement not confirmed: %w", err)
	}
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.ackErr
}

// lockedUntil is the latest lock deadline among the unsettled deliveries
// of the last poll (zero: none).
func (c *shareConsumer) lockedUntil() (time.Time, []*shareDelivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var until time.Time
	var open []*shareDelivery
	for _, d := range c.held {
		if dl, ok := d.open(); ok {
			open = append(open, d)
			if dl.After(until) {
				until = dl
			}
		}
	}
	return until, open
}

func (c *shareConsumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// A poll would accept what is still unsettled: wait for its lock.
	until, open := c.lockedUntil()
	for len(open) > 0 && time.Now().Before(until) {
		t := time.NewTimer(min(time.Until(until), 20*time.Millisecond))
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		until, open = c.lockedUntil()
	}
	for _, d := range open {
		// The lock ran out: the broker released it (or is about to, at
		// its next sweep); a release says the same, and keeps the poll
		// below from accepting it.
		d.r.Ack(kgo.AckRelease)
		d.mu.Lock()
		d.done, d.expired = true, true
		d.mu.Unlock()
	}
	fs := c.cl.PollRecords(wctx, max)
	if fs.IsClientClosed() {
		return nil, errors.New("the member is closed")
	}
	for _, fe := range fs.Errors() {
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		return nil, fmt.Errorf("share fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
	}
	if len(fs.Records()) == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var out []mq.Delivery
	var held []*shareDelivery
	for _, r := range fs.Records() {
		dl := r.AcquisitionDeadline()
		if dl.IsZero() {
			dl = time.Now().Add(c.b.share.LockDuration)
		}
		d := &shareDelivery{c: c, r: r, announced: dl, deadline: dl}
		held = append(held, d)
		out = append(out, d)
	}
	c.mu.Lock()
	c.held = held
	c.mu.Unlock()
	if c.b.k.opts.Defects.ShareAutoAccept {
		// Implicit acknowledgement at once: accepted as handed out,
		// before anything was processed.
		for _, d := range held {
			d.r.Ack(kgo.AckAccept)
		}
		_ = c.flush(ctx)
	}
	return out, nil
}

// Close ends the member: kgo's leave releases what it still held.
func (c *shareConsumer) Close() error {
	c.once.Do(func() {
		c.cl.Close()
		c.b.mu.Lock()
		delete(c.b.members, c)
		c.b.mu.Unlock()
	})
	return nil
}

// shareDelivery is one record acquired by a member.
type shareDelivery struct {
	c         *shareConsumer
	r         *kgo.Record
	announced time.Time // the broker's acquisition deadline

	mu       sync.Mutex
	deadline time.Time // pushed back by a renew
	done     bool
	expired  bool // released by the member once its lock ended
}

func (d *shareDelivery) Message() mq.Message { return message(d.r) }
func (d *shareDelivery) Attempt() int        { return int(d.r.DeliveryCount()) }
func (d *shareDelivery) Position() string    { return Position(d.r.Partition, d.r.Offset) }

// LockDeadline is the acquisition-lock deadline the broker announced with
// the record (ShareFetch's AcquisitionLockTimeoutMillis).
func (d *shareDelivery) LockDeadline() time.Time { return d.announced }

func (d *shareDelivery) open() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deadline, !d.done
}

// settle marks the record and waits for the broker's answer. A record
// already settled, or released when its lock ended, is refused here: kgo
// would send nothing and report no error.
func (d *shareDelivery) settle(ctx context.Context, s kgo.AckStatus) error {
	d.mu.Lock()
	done, expired := d.done, d.expired
	d.done = true
	d.mu.Unlock()
	if expired {
		return fmt.Errorf("%s of %s: its lock had ended and the member released it for redelivery: not sent", s, d.Position())
	}
	if done {
		return fmt.Errorf("%s of %s: already settled: not sent", s, d.Position())
	}
	// Noted before it is sent: the start offset may pass the record
	// before the answer comes, and it is no archival.
	terminal := s == kgo.AckAccept || s == kgo.AckReject
	if terminal {
		d.c.b.finished(d.c.group, d.Position())
	}
	d.r.Ack(s)
	d.c.ackMu.Lock()
	defer d.c.ackMu.Unlock()
	if err := d.c.flush(ctx); err != nil {
		if terminal {
			d.c.b.unfinished(d.c.group, d.Position())
		}
		return fmt.Errorf("%s of %s: %w", s, d.Position(), err)
	}
	return nil
}

func (d *shareDelivery) Ack(ctx context.Context) error {
	if err := d.settle(ctx, kgo.AckAccept); err != nil {
		return err
	}
	if d.c.b.k.opts.Defects.ShareAckDeletes {
		return d.deleteUpTo(ctx)
	}
	return nil
}
func (d *shareDelivery) Term(ctx context.Context) error {
	return d.settle(ctx, kgo.AckReject)
}

func (d *shareDelivery) Nak(ctx context.Context, delay time.Duration) error {
	if delay > 0 {
		return fmt.Errorf("%w: KIP-932 has no delayed release: a released record is available at once", mq.ErrUnsupported)
	}
	if d.c.b.k.opts.Defects.ShareForgetCount {
		// The defect: the record goes back as a new record (its count
		// starts again at 1) and the original is accepted.
		if _, err := d.c.b.Publish(ctx, d.c.topic, d.Message()); err != nil {
			return err
		}
		return d.settle(ctx, kgo.AckAccept)
	}
	return d.settle(ctx, kgo.AckRelease)
}

// InProgress renews the lock (KIP-1222, Kafka 4.2): the deadline moves to a
// lock duration from now.
func (d *shareDelivery) InProgress(ctx context.Context) error {
	if _, open := d.open(); !open {
		return fmt.Errorf("renew of %s: already settled or released: not sent", d.Position())
	}
	d.r.Ack(kgo.AckRenew)
	d.c.ackMu.Lock()
	err := d.c.flush(ctx)
	d.c.ackMu.Unlock()
	if err != nil {
		return fmt.Errorf("renew of %s: %w", d.Position(), err)
	}
	d.mu.Lock()
	d.deadline = time.Now().Add(d.c.b.share.LockDuration)
	d.mu.Unlock()
	return nil
}

// deleteUpTo is the share-ack-deletes defect: after an accept the client
// deletes the records up to it, as if an ack were a delete.
func (d *shareDelivery) deleteUpTo(ctx context.Context) error {
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: d.r.Topic, Partition: d.r.Partition, At: d.r.Offset + 1, LeaderEpoch: -1})
	_, err := d.c.b.k.adm.DeleteRecords(ctx, os)
	return err
}

// shareBrokerConfigs are the kfake broker configs behind a declared Share.
// The sweep that expires locks runs every 50 ms (kfake's default 5 s would
// add up to 5 s to every lock).
func shareBrokerConfigs(s Share, neverExpires bool) map[string]string {
	lock := s.LockDuration
	if neverExpires {
		lock = time.Hour
	}
	return map[string]string{
		"group.share.record.lock.duration.ms": fmt.Sprint(lock.Milliseconds()),
		"group.share.delivery.count.limit":    fmt.Sprint(s.DeliveryLimit),
		"share.record.lock.sweep.interval.ms": "50",
		"group.share.heartbeat.interval.ms":   "100",
	}
}

// embeddedShare starts a kfake cluster whose share groups run with s (a
// zero field: KitShare's) and binds the kit to it through share groups.
func embeddedShare(ctx context.Context, client Client, s Share) (*Target, error) {
	if s.LockDuration <= 0 {
		s.LockDuration = KitShare.LockDuration
	}
	if s.DeliveryLimit <= 0 {
		s.DeliveryLimit = KitShare.DeliveryLimit
	}
	client.Options.Share = &s
	e, err := StartEmbedded(ctx, kfake.BrokerConfigs(shareBrokerConfigs(s, client.Options.Defects.ShareLockNeverExpires)))
	if err != nil {
		return nil, err
	}
	client.Options.Seeds = e.Seeds()
	t, err := newTarget(ctx, client, e.Stop)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	t.Embedded = e
	t.Emulator = true
	t.Address = "kfake " + strings.Join(e.Seeds(), ",")
	t.Version = KfakeVersion + ", franz-go " + FranzVersion
	t.Notes = append(t.Notes, "emulator: franz-go's kfake (share_groups.go), not a Kafka deployment; a pass certifies the client-side contract and the kit's rules, not a Kafka server's share-group configuration")
	t.Config["group.share.*"] = fmt.Sprintf("set on the kit's kfake: record.lock.duration.ms=%d, delivery.count.limit=%d (share.record.lock.sweep.interval.ms=50)", s.LockDuration.Milliseconds(), s.DeliveryLimit)
	shareTarget(t, s)
	return t, nil
}

// openShare binds the kit to the cluster at raw through share groups;
// Share is what the team declares its groups run with (Kafka's defaults
// when zero). The cluster must have share groups enabled (Kafka 4.1+:
// group.share.enable, or share.version=1 from 4.2).
func openShare(ctx context.Context, raw string, client Client, s Share) (*Target, error) {
	if s.LockDuration <= 0 {
		s.LockDuration = KafkaShareDefaults.LockDuration
	}
	if s.DeliveryLimit <= 0 {
		s.DeliveryLimit = KafkaShareDefaults.DeliveryLimit
	}
	client.Options.Share = &s
	t, err := open(ctx, raw, client)
	if err != nil {
		return nil, err
	}
	t.Config["group.share.*"] = fmt.Sprintf("declared: record.lock.duration.ms=%d, delivery.count.limit=%d (not read from the cluster)", s.LockDuration.Milliseconds(), s.DeliveryLimit)
	shareTarget(t, s)
	return t, nil
}

// shareTarget turns a Kafka target into a share-group one.
func shareTarget(t *Target, s Share) {
	t.Caps = ShareCaps()
	if t.Client.Declare != nil {
		t.Caps = t.Client.Declare(t.Caps)
	}
	t.Private = nil // BR-3.1 is broker/kafka's; its restart has nothing of share groups
	delete(t.Config, "restartable")
	t.Config["consumer"] = "share group member (kgo.ShareGroup, one record a fetch, share.auto.offset.reset=earliest): ack = ACCEPT, nak = RELEASE, term = REJECT, in-progress = RENEW, each confirmed by the broker's acknowledge response"
	t.Config["crash"] = "a member that leaves (kgo releases what it held); a hung member keeps its records until the lock ends"
	t.Config["attempts"] = "the broker's delivery count (Record.DeliveryCount)"
	t.Config["redelivery"] = fmt.Sprintf("after the acquisition lock (%s) or at once after a RELEASE; archived at the delivery limit (%d), no dead-letter topic", s.LockDuration, s.DeliveryLimit)
	if t.Client.Options.Defects.ShareLockNeverExpires {
		t.Config["group.share.*"] += "; the cluster's lock is really an hour (the mutant)"
	}
}
