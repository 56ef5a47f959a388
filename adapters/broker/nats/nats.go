// Package nats is the broker/nats target: mq.Broker over NATS JetStream
// (github.com/nats-io/nats.go/jetstream), against an embedded nats-server
// (StartEmbedded) or any server reachable by URL (Connect).
//
// A topic is a JetStream stream named after it, bound to the one subject
// "onceproof.tck.<name>", so on a shared server the kit touches only what it
// created. A consumer group is a durable pull consumer; each member opens its
// own connection so Close behaves like a crashed process (its pending
// deliveries stay with the server until their ack wait ends).
package nats

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
)

// DefaultDedupeWindow is the de-dupe window the kit gives its streams unless
// told otherwise: short, so a run that must watch the window pass stays
// quick. NATS' own default is two minutes.
const DefaultDedupeWindow = 2 * time.Second

// SubjectPrefix is the subject space of the kit's streams.
const SubjectPrefix = "onceproof.tck."

// Options tune a connection.
type Options struct {
	// DedupeWindow is the Duplicates window of the streams the kit creates
	// (default DefaultDedupeWindow).
	DedupeWindow time.Duration
	// Memory stores the kit's streams in memory instead of files. Only a
	// mutant wants this: memory streams do not survive a restart.
	Memory bool
	// Name is the client connection name the server shows.
	Name string
	// Timeout bounds the initial connect and the JetStream check (default 5s).
	Timeout time.Duration
	// BatchLimits are the server's atomic batch limits (zero fields: the
	// server's defaults, DefaultBatchMax and DefaultBatchAbandon).
	BatchLimits mq.BatchLimits
	// TLS, when set, is required on every connection and verifies the
	// server with the run's material (tck run --tls-ca; docs/tls.md).
	TLS *tls.Config
}

func (o Options) withDefaults() Options {
	if o.DedupeWindow <= 0 {
		o.DedupeWindow = DefaultDedupeWindow
	}
	if o.Name == "" {
		o.Name = "onceproof-tck"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	return o
}

// Broker is mq.Broker over one JetStream connection (plus one connection per
// consumer member).
type Broker struct {
	url  string
	opts Options
	nc   *natsgo.Conn
	js   jetstream.JetStream

	mu      sync.Mutex
	members []*consumer
}

var _ mq.Broker = (*Broker)(nil)
var _ mq.MaxDeliverWatcher = (*Broker)(nil)

// Connect opens a broker on the server at url (nats://[user:password@]host:port)
// and checks that JetStream is enabled for the account. Errors never carry
// the password; callers still pass them through target.Unavailable.
func Connect(ctx context.Context, url string, opts Options) (mq.Broker, error) {
	b, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ConnectBroker is Connect returning the concrete type.
func ConnectBroker(ctx context.Context, url string, opts Options) (*Broker, error) {
	return connect(ctx, url, opts)
}

func connect(ctx context.Context, url string, opts Options) (*Broker, error) {
	opts = opts.withDefaults()
	// A permission violation arrives asynchronously; catch it so that an
	// account without JetStream rights fails at once and says so.
	denied := make(chan error, 1)
	nc, err := dial(url, opts, natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) {
		if errors.Is(err, natsgo.ErrPermissionViolation) {
			select {
			case denied <- err:
			default:
			}
		}
	}))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	// AccountInfo is the cheapest request that fails both on a server without
	// JetStream and on an account not allowed to use it.
	cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	infoErr := make(chan error, 1)
	go func() {
		_, err := js.AccountInfo(cctx)
		infoErr <- err
	}()
	select {
	case err = <-infoErr:
	case err = <-denied:
		nc.Close()
		return nil, fmt.Errorf("the account may not use JetStream: %w", err)
	}
	if err != nil {
		nc.Close()
		switch {
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return nil, fmt.Errorf("the server has no JetStream for this account: %w", err)
		default:
			return nil, fmt.Errorf("JetStream account info: %w", err)
		}
	}
	return &Broker{url: url, opts: opts, nc: nc, js: js}, nil
}

// dial connects with settings that suit a test kit: a quick failure when
// nothing listens, fast reconnects across a server restart.
func dial(url string, opts Options, extra ...natsgo.Option) (*natsgo.Conn, error) {
	url, auth, err := clientAuth(url, opts.TLS)
	if err != nil {
		return nil, err
	}
	extra = append(auth, extra...)
	nc, err := natsgo.Connect(url, append([]natsgo.Option{
		natsgo.Name(opts.Name),
		natsgo.Timeout(opts.Timeout),
		natsgo.ReconnectWait(50 * time.Millisecond),
		natsgo.MaxReconnects(-1),
		natsgo.NoCallbacksAfterClientClose(),
	}, extra...)...)
	if err != nil {
		if opts.TLS != nil && len(opts.TLS.Certificates) > 0 && strings.Contains(err.Error(), "after TLS handshake") {
			// TLS 1.3 reports a refused client certificate only after
			// the handshake, as a closed connection.
			return nil, fmt.Errorf("connecting (the server may not accept the client certificate): %w", err)
		}
		return nil, fmt.Errorf("connecting: %w", err)
	}
	return nc, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// StreamName maps a topic to a stream name (no dots, spaces or wildcards).
func StreamName(topic string) string { return unsafeName.ReplaceAllString(topic, "_") }

// Subject is the one subject a topic's stream binds.
func Subject(topic string) string { return SubjectPrefix + StreamName(topic) }

// CreateTopic creates the stream with the declared window and retention.
func (b *Broker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	window := cfg.DedupeWindow
	if window <= 0 {
		window = b.opts.DedupeWindow
	}
	sc := jetstream.StreamConfig{
		Name:       StreamName(name),
		Subjects:   []string{Subject(name)},
		Duplicates: window,
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   cfg.Replicas,
		MaxAge:     cfg.MaxAge,
	}
	switch cfg.Retention {
	case mq.WorkQueue:
		sc.Retention = jetstream.WorkQueuePolicy
	case mq.Interest:
		sc.Retention = jetstream.InterestPolicy
	}
	// A server with atomic batch publish gets it on every stream of the
	// kit's (allow_atomic): it changes nothing for a single publish.
	if ok, _ := b.atomicBatches(); ok {
		sc.AllowAtomicPublish = true
	}
	if b.opts.Memory || cfg.Storage == mq.MemoryStorage {
		sc.Storage = jetstream.MemoryStorage
	}
	// A server-side store failure (API code 500, e.g. err_code 10049 "error
	// creating store for stream", seen once on an idle embedded server in
	// CI) is retried twice: topic creation is the kit's setup, not what a
	// rule measures. A failure that persists is returned.
	for attempt := 1; ; attempt++ {
		_, err := b.js.CreateStream(ctx, sc)
		var apiErr *jetstream.APIError
		if err == nil || attempt == 3 || !errors.As(err, &apiErr) || apiErr.Code != 500 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
}

// DeleteTopic deletes the stream and with it its consumers.
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	err := b.js.DeleteStream(ctx, StreamName(name))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// Publish sends m with Nats-Msg-Id = m.ID and waits for the stream's ack.
func (b *Broker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	msg := natsgo.NewMsg(Subject(topic))
	msg.Data = m.Payload
	for k, v := range m.Headers {
		msg.Header.Set(k, v)
	}
	var popts []jetstream.PublishOpt
	if m.ID != "" {
		popts = append(popts, jetstream.WithMsgID(m.ID))
	}
	ack, err := b.js.PublishMsg(ctx, msg, popts...)
	if err != nil {
		return mq.PublishAck{}, err
	}
	return mq.PublishAck{Position: strconv.FormatUint(ack.Sequence, 10), Duplicate: ack.Duplicate}, nil
}

// Consumer opens a new member of cfg.Group on its own connection.
// Acked says whether group's consumer on topic holds the message at
// position (its stream sequence) as acknowledged: the consumer's ack floor
// has reached it (CONSUMER.INFO). It changes nothing.
func (b *Broker) Acked(ctx context.Context, topic, group, position string) (bool, error) {
	seq, err := strconv.ParseUint(position, 10, 64)
	if err != nil {
		return false, fmt.Errorf("not a stream sequence: %q", position)
	}
	c, err := b.js.Consumer(ctx, StreamName(topic), StreamName(group))
	if err != nil {
		return false, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.AckFloor.Stream >= seq, nil
}

func (b *Broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if cfg.Group == "" {
		return nil, errors.New("nats: a consumer needs a group")
	}
	nc, err := dial(b.url, b.opts)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cc := jetstream.ConsumerConfig{
		Durable:    StreamName(cfg.Group),
		AckPolicy:  jetstream.AckExplicitPolicy,
		AckWait:    cfg.AckWait,
		MaxDeliver: cfg.MaxDeliver,
		BackOff:    cfg.Backoff,
	}
	if cc.MaxDeliver <= 0 {
		cc.MaxDeliver = -1
	}
	c, err := js.CreateOrUpdateConsumer(ctx, StreamName(topic), cc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	m := &consumer{nc: nc, c: c}
	b.mu.Lock()
	b.members = append(b.members, m)
	b.mu.Unlock()
	return m, nil
}

// ReadAll reads every stored message by sequence, straight from the stream.
// A stream the server does not have is mq.ErrNotFound: a definite answer,
// unlike an error on the way.
func (b *Broker) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	s, err := b.js.Stream(ctx, StreamName(topic))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %w", mq.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []mq.Stored
	if info.State.Msgs == 0 {
		return out, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed (work queue ack, or an interior delete)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, mq.Stored{Message: toMessage(raw.Data, raw.Header), Position: strconv.FormatUint(seq, 10)})
	}
	return out, nil
}

func toMessage(data []byte, h natsgo.Header) mq.Message {
	m := mq.Message{ID: h.Get(jetstream.MsgIDHeader), Payload: data}
	for k := range h {
		if k == jetstream.MsgIDHeader {
			continue
		}
		if m.Headers == nil {
			m.Headers = map[string]string{}
		}
		m.Headers[k] = h.Get(k)
	}
	return m
}

// Capabilities is what JetStream has, with the window the kit's streams get.
// The de-dupe table is rebuilt from the stored messages when a stream
// recovers, so an id survives a restart under limits retention; under a work
// queue an acknowledged message is gone and so is its id.
func (b *Broker) Capabilities() mq.Capabilities {
	atomic, _ := b.atomicBatches()
	return mq.Capabilities{
		AtomicBatch:        atomic,
		DedupeWindow:       b.opts.DedupeWindow,
		DedupeRefreshOnHit: false,
		DuplicateFlag:      true,
		AckWait:            true,
		ConfirmedAck:       true,
		NakDelay:           true,
		Term:               true,
		MaxDeliver:         true,
		InProgress:         true,
		Retentions:         []mq.Retention{mq.Limits, mq.WorkQueue},
		DedupeAfterRestart: []mq.Retention{mq.Limits},
	}
}

// WatchMaxDeliver subscribes to the server's max-deliveries advisory.
func (b *Broker) WatchMaxDeliver(ctx context.Context, topic, group string) (<-chan string, error) {
	subj := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", StreamName(topic), StreamName(group))
	out := make(chan string, 64)
	sub, err := b.nc.Subscribe(subj, func(m *natsgo.Msg) {
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
		}
		if err := jsonUnmarshal(m.Data, &adv); err != nil {
			return
		}
		select {
		case out <- strconv.FormatUint(adv.StreamSeq, 10):
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	if err := b.nc.FlushWithContext(ctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	go func() {
		<-ctx.Done()
		_ = sub.Unsubscribe()
	}()
	return out, nil
}

// Close closes every member still open and the main connection.
func (b *Broker) Close() error {
	b.mu.Lock()
	members := b.members
	b.members = nil
	b.mu.Unlock()
	for _, m := range members {
		_ = m.Close()
	}
	b.nc.Close()
	return nil
}

type consumer struct {
	nc *natsgo.Conn
	c  jetstream.Consumer
}

func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	if wait <= 0 {
		wait = time.Millisecond
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = max0(time.Until(dl))
	}
	batch, err := c.c.Fetch(max, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, err
	}
	var out []mq.Delivery
	for m := range batch.Messages() {
		out = append(out, &delivery{nc: c.nc, m: m})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, natsgo.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return out, err
	}
	return out, nil
}

func max0(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return time.Millisecond
	}
	return d
}

func (c *consumer) Close() error {
	c.nc.Close()
	return nil
}

type delivery struct {
	nc *natsgo.Conn
	m  jetstream.Msg
}

func (d *delivery) Message() mq.Message { return toMessage(d.m.Data(), d.m.Headers()) }

func (d *delivery) Attempt() int {
	md, err := d.m.Metadata()
	if err != nil {
		return 0
	}
	return int(md.NumDelivered)
}

func (d *delivery) Position() string {
	md, err := d.m.Metadata()
	if err != nil {
		return ""
	}
	return strconv.FormatUint(md.Sequence.Stream, 10)
}

// SettleTimeout bounds Ack, Nak, Term and InProgress when the caller's
// context has no deadline: nats.go needs one to wait for the server
// ("nats: context requires a deadline"), and a consumer may well pass
// context.Background() or a cancel-only context.
const SettleTimeout = 5 * time.Second

// settleCtx is ctx, with a SettleTimeout deadline if it has none.
func settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, SettleTimeout)
}

// Ack is a double ack: it returns once the server confirmed it.
func (d *delivery) Ack(ctx context.Context) error {
	ctx, cancel := settleCtx(ctx)
	defer cancel()
	return d.m.DoubleAck(ctx)
}

// Nak, Term and InProgress are fire-and-forget in JetStream; the flush after
// each makes sure the server has read it before the call returns, so the
// kit's clocks start from the server's moment, not the client's.
func (d *delivery) Nak(ctx context.Context, delay time.Duration) error {
	var err error
	if delay > 0 {
		err = d.m.NakWithDelay(delay)
	} else {
		err = d.m.Nak()
	}
	return d.flush(ctx, err)
}

func (d *delivery) Term(ctx context.Context) error { return d.flush(ctx, d.m.Term()) }

func (d *delivery) InProgress(ctx context.Context) error { return d.flush(ctx, d.m.InProgress()) }

func (d *delivery) flush(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	ctx, cancel := settleCtx(ctx)
	defer cancel()
	return d.nc.FlushWithContext(ctx)
}
