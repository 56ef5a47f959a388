// Package rabbitmq is the broker/rabbitmq target: mq.Broker over RabbitMQ
// (AMQP 0-9-1, github.com/rabbitmq/amqp091-go), against a server at a URL
// (amqp://user:password@host:port/vhost) or a rabbitmq-server of the kit's
// own started from PATH.
//
// The mapping, and RabbitMQ's own acknowledgement words (seed 002, section
// 六: each broker has its own, not to be swapped across products):
//
//   - a topic is a durable direct exchange "onceproof-tck.<run>.<topic>"
//     with, bound under the routing key "m", a stream "<exchange>.log" (the
//     log ReadAll reads back: what the topic stores, acked or not) and a
//     quorum queue "<exchange>.q" (the topic's queue, which every group
//     without a max-deliver consumes from: RabbitMQ has no consumer groups
//     over one copy, a queue is the group);
//   - a group with a max-deliver N gets a quorum queue of its own,
//     "<exchange>.g.<group>", declared when its first member opens (it
//     receives what is published from then on) with x-delivery-limit N-1
//     (a quorum queue drops or dead-letters a message once its delivery
//     count exceeds the limit) and x-dead-letter-exchange "<exchange>.dlx",
//     a fanout exchange bound to the quorum queue "<exchange>.dead";
//   - Publish is persistent, mandatory and confirmed: it returns once the
//     broker's publisher confirm (basic.ack) came, which RabbitMQ sends when
//     every queue the message was routed to took it (a quorum queue: a
//     quorum of its replicas, fsynced); a basic.nack is ErrNacked, a
//     basic.return (unroutable) ErrReturned, whatever confirm follows it;
//   - a member is its own connection; Fetch pulls with basic.get (so the
//     server hands out only what the kit asked for); Attempt is the quorum
//     queue's x-delivery-count plus one;
//   - Ack is basic.ack, Nak basic.nack with requeue (no delay: RabbitMQ
//     has none), Term basic.reject without requeue; AMQP has no reply to
//     any of them, so each is followed by a synchronous round trip on the
//     same channel, which fails when the server closed the channel over
//     the settle (an unknown delivery tag, a consumer_timeout);
//   - an unacknowledged delivery comes back when its channel closes: when
//     its connection drops (Close, a crash), or when the node's
//     consumer_timeout closes it (the kit's own server runs it at the ack
//     wait); there is no per-delivery deadline to push back (no in-progress).
package rabbitmq

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/onceproof/tck/mq"
)

// NamePrefix starts every exchange and queue the kit declares.
const NamePrefix = "onceproof-tck."

// routingKey binds the topic's queues to its exchange.
const routingKey = "m"

// Header names the kit sets beyond the message's own headers.
const (
	headerMarker = "onceproof-tck-marker" // a ReadAll's end-of-log marker
	headerPrefix = "h-"                   // a message header
)

// Options tune a handle.
type Options struct {
	// Run is this target's run id: every name is NamePrefix+Run+"."+topic.
	Run string
	// Poll is how often a waiting Fetch asks again (default 20ms).
	Poll time.Duration
	// ConsumerTimeout is the node's consumer_timeout when the kit knows it
	// (its own server); 0 when it does not.
	ConsumerTimeout time.Duration

	// StreamURL reaches the server's stream protocol port
	// (rabbitmq-stream://user:password@host:port/vhost); "" when the kit
	// does not know it: no named producers.
	StreamURL string
	// TLS is the run's trust material for an amqps:// URL (tck run
	// --tls-ca, --tls-cert, --tls-key, --tls-server-name); nil: the
	// system's roots, or what the URL's cacertfile/certfile/keyfile name.
	// An amqp:// URL stays plain.
	TLS *tls.Config

	// The defects of the mutants (only a mutant sets these).

	// IgnoreReturns reports a publish stored once its confirm came,
	// never looking at a basic.return before it.
	IgnoreReturns bool
	// NackIsAck reports a nack'd publish stored.
	NackIsAck bool
	// NoDeadLetterExchange names the dead-letter exchange on a group's
	// queue without declaring it: RabbitMQ then drops what the queue
	// dead-letters, silently.
	NoDeadLetterExchange bool
	// FireAndForgetAck settles as AMQP lets a client: the settle sent and
	// its error ignored, no round trip to show the server took it.
	FireAndForgetAck bool
	// TermRequeues terminates with basic.reject requeue=true.
	TermRequeues bool
	// NakDrops naks with basic.nack requeue=false.
	NakDrops bool
	// DeliveryLimitOffByOne declares a group's x-delivery-limit as the
	// max-deliver itself, as a client that reads the limit as deliveries
	// (RabbitMQ counts returns): the server holds one more delivery than
	// declared.
	DeliveryLimitOffByOne bool
	// FreshProducerName gives every named producer a name of its own, as
	// a client that puts its process id in the name does.
	FreshProducerName bool
}

func (o Options) withDefaults() Options {
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

// Broker is mq.Broker over one AMQP connection (plus one per member).
type Broker struct {
	url  string
	opts Options

	mu      sync.Mutex // the connection and the publishing channel
	conn    *amqp.Connection
	pub     *amqp.Channel
	confirm chan amqp.Confirmation
	returns chan amqp.Return

	pubMu sync.Mutex // one publish at a time: its return and confirm are its own

	membersMu sync.Mutex
	members   []*consumer

	// queues, when set, learns every queue the handle declares or deletes
	// (a server of the kit's own waits for them after a restart).
	queues *queueSet
}

// queueSet is the queues declared on a server, by name.
type queueSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (q *queueSet) set(name string, on bool) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.names == nil {
		q.names = map[string]bool{}
	}
	if on {
		q.names[name] = true
	} else {
		delete(q.names, name)
	}
}

func (q *queueSet) list() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for n := range q.names {
		out = append(out, n)
	}
	return out
}

var (
	_ mq.Broker              = (*Broker)(nil)
	_ mq.MaxDeliverWatcher   = (*Broker)(nil)
	_ mq.UnroutablePublisher = (*Broker)(nil)
	_ mq.BoundedTopics       = (*Broker)(nil)
	_ mq.DeadLetterReader    = (*Broker)(nil)
)

// Connect opens a handle on the server at url and checks it answers.
// Errors never carry the password.
func Connect(ctx context.Context, url string, opts Options) (*Broker, error) {
	b := &Broker{url: url, opts: opts.withDefaults()}
	if _, err := b.connection(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// dial opens a connection to url; over amqps://, with tlsCfg when set.
func dial(ctx context.Context, url string, tlsCfg *tls.Config) (*amqp.Connection, error) {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return nil, fmt.Errorf("not a RabbitMQ URL (want amqp://user:password@host:port/vhost or amqps://...): %s", scrub(err.Error(), url))
	}
	deadline := 5 * time.Second
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadline {
		deadline = max(time.Until(d), 10*time.Millisecond)
	}
	// Heartbeats every 30 s: a kit paused for 20 s keeps its connections
	// (the server drops one after two missed heartbeats).
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("onceproof-tck")
	cfg := amqp.Config{Dial: amqp.DefaultDial(deadline), Properties: props, Heartbeat: 30 * time.Second}
	if tlsCfg != nil {
		// A copy: amqp091-go writes the URL's host into ServerName.
		cfg.TLSClientConfig = tlsCfg.Clone()
	}
	conn, err := amqp.DialConfig(url, cfg)
	if err != nil {
		msg := scrub(err.Error(), url)
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.AccessRefused {
			return nil, fmt.Errorf("the RabbitMQ server at %s:%d refused the login of %q: %s", u.Host, u.Port, u.Username, msg)
		}
		if u.Scheme == "amqps" && !strings.Contains(msg, "certificate") && (strings.Contains(msg, "reset by peer") || strings.Contains(msg, "EOF") || strings.Contains(msg, "broken pipe") || errors.Is(err, net.ErrClosed) || strings.Contains(msg, "use of closed network connection") || strings.Contains(msg, "channel/connection is not open")) {
			// TLS 1.3: a server that wants a client certificate, or refuses
			// the one given, may only close the connection after the
			// handshake, before AMQP's first frame.
			msg += " (the server closed the TLS connection: it may want a client certificate, --tls-cert and --tls-key, or refuse the one given)"
		}
		return nil, fmt.Errorf("cannot reach RabbitMQ at %s:%d (vhost %q): %s", u.Host, u.Port, u.Vhost, msg)
	}
	return conn, nil
}

// scrub removes the URL's password from an error text.
func scrub(s, url string) string {
	if u, err := amqp.ParseURI(url); err == nil && u.Password != "" {
		s = strings.ReplaceAll(s, u.Password, "xxxxx")
	}
	return s
}

// connection is the handle's connection, dialled again when it closed (a
// restart of the server, a channel error that took it).
func (b *Broker) connection(ctx context.Context) (*amqp.Connection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil && !b.conn.IsClosed() {
		return b.conn, nil
	}
	conn, err := dial(ctx, b.url, b.opts.TLS)
	if err != nil {
		return nil, err
	}
	b.conn, b.pub = conn, nil
	return conn, nil
}

// channel opens a channel of its own on the handle's connection.
func (b *Broker) channel(ctx context.Context) (*amqp.Channel, error) {
	conn, err := b.connection(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		// The connection went between the check and the open: once more.
		if conn, err = b.connection(ctx); err != nil {
			return nil, err
		}
		return conn.Channel()
	}
	return ch, nil
}

// publisher is the handle's confirm-mode channel; b.pubMu is held.
func (b *Broker) publisher(ctx context.Context) (*amqp.Channel, error) {
	conn, err := b.connection(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pub != nil && !b.pub.IsClosed() && b.conn == conn {
		return b.pub, nil
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("confirm.select: %w", err)
	}
	// Buffered: the reader delivers a basic.return to its channel before
	// it handles the confirm that follows, so once the confirm is read any
	// return for the same publish already waits here.
	b.confirm = ch.NotifyPublish(make(chan amqp.Confirmation, 16))
	b.returns = ch.NotifyReturn(make(chan amqp.Return, 16))
	b.pub = ch
	return ch, nil
}

// Names of a topic's exchange and queues.
func (b *Broker) exchange(topic string) string { return NamePrefix + b.opts.Run + "." + topic }
func (b *Broker) logQueue(topic string) string { return b.exchange(topic) + ".log" }
func (b *Broker) topicQueue(topic string) string {
	return b.exchange(topic) + ".q"
}
func (b *Broker) groupQueue(topic, group string) string { return b.exchange(topic) + ".g." + group }
func (b *Broker) dlx(topic string) string               { return b.exchange(topic) + ".dlx" }
func (b *Broker) deadQueue(topic string) string         { return b.exchange(topic) + ".dead" }

// Capabilities is what RabbitMQ has through this adapter.
func (b *Broker) Capabilities() mq.Capabilities { return capabilities(b.opts) }

func capabilities(o Options) mq.Capabilities {
	c := mq.Capabilities{
		ConfirmedAck: true, Term: true, MaxDeliver: true,
		// A closed connection's unacknowledged deliveries go back to the
		// queue at once, for another member (no ack wait needed).
		RebalanceRedelivery: true,

		Retentions: []mq.Retention{mq.Limits},
	}
	if o.ConsumerTimeout > 0 {
		c.AckWait, c.ConsumerTimeout = true, true
	}
	c.NamedProducerDedupe = o.StreamURL != ""
	return c
}

// declare runs fn on a channel of its own, closed afterwards.
func (b *Broker) declare(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := b.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	return fn(ch)
}

// CreateTopic declares the topic's exchange, its log (a stream), its queue
// (a quorum queue) and its dead-letter exchange and queue. Only limits
// retention: the log keeps what an ack removes from the queue.
func (b *Broker) CreateTopic(ctx context.Context, name string, cfg mq.TopicConfig) error {
	if cfg.Retention == mq.WorkQueue || cfg.Retention == mq.Interest {
		return fmt.Errorf("%w: %s retention: the adapter reads a topic back from its stream, which an ack does not change; RabbitMQ's queues have no non-destructive read", mq.ErrUnsupported, cfg.Retention)
	}
	if cfg.Storage == mq.MemoryStorage {
		return fmt.Errorf("%w: memory storage: quorum queues and streams are always on disk", mq.ErrUnsupported)
	}
	x := b.exchange(name)
	return b.declare(ctx, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(x, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
			return fmt.Errorf("exchange.declare %s: %w", x, err)
		}
		logArgs := amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeStream}
		if cfg.MaxAge > 0 {
			logArgs[amqp.StreamMaxAgeArg] = fmt.Sprintf("%ds", max(int(cfg.MaxAge/time.Second), 1))
		}
		if err := b.queue(ch, b.logQueue(name), x, logArgs); err != nil {
			return err
		}
		if err := b.queue(ch, b.topicQueue(name), x, amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum}); err != nil {
			return err
		}
		if b.opts.NoDeadLetterExchange {
			return nil
		}
		if err := ch.ExchangeDeclare(b.dlx(name), amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
			return fmt.Errorf("exchange.declare %s: %w", b.dlx(name), err)
		}
		return b.queue(ch, b.deadQueue(name), b.dlx(name), amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum})
	})
}

// queue declares a durable queue and binds it to exchange x.
func (b *Broker) queue(ch *amqp.Channel, q, x string, args amqp.Table) error {
	if _, err := ch.QueueDeclare(q, true, false, false, false, args); err != nil {
		return fmt.Errorf("queue.declare %s: %w", q, err)
	}
	b.queues.set(q, true)
	key := routingKey
	if strings.HasSuffix(x, ".dlx") {
		key = ""
	}
	if err := ch.QueueBind(q, key, x, false, nil); err != nil {
		return fmt.Errorf("queue.bind %s to %s: %w", q, x, err)
	}
	return nil
}

// CreateBoundedTopic declares a topic whose only queue holds about max
// messages and refuses publishes beyond with a basic.nack (x-max-length,
// x-overflow reject-publish; a quorum queue checks the limit as it
// applies a publish, so one more can get in).
func (b *Broker) CreateBoundedTopic(ctx context.Context, name string, maxLen int) error {
	x := b.exchange(name)
	return b.declare(ctx, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(x, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
			return fmt.Errorf("exchange.declare %s: %w", x, err)
		}
		return b.queue(ch, b.topicQueue(name), x, amqp.Table{
			amqp.QueueTypeArg: amqp.QueueTypeQuorum, amqp.QueueMaxLenArg: maxLen, amqp.QueueOverflowArg: amqp.QueueOverflowRejectPublish,
		})
	})
}

// DeleteTopic deletes the topic's exchanges and queues, the groups' own
// queues with them (found by name: they are bound to the exchange).
func (b *Broker) DeleteTopic(ctx context.Context, name string) error {
	b.membersMu.Lock()
	var groupQs []string
	for _, c := range b.members {
		if c.topic == name && c.queue != b.topicQueue(name) {
			groupQs = append(groupQs, c.queue)
		}
	}
	b.membersMu.Unlock()
	var errs []error
	// Each delete on a channel of its own: a missing queue closes the
	// channel it was asked on.
	for _, q := range append([]string{b.logQueue(name), b.topicQueue(name), b.deadQueue(name)}, groupQs...) {
		b.queues.set(q, false)
		errs = append(errs, b.declare(ctx, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(q, false, false, false)
			return ignoreNotFound(err)
		}))
	}
	for _, x := range []string{b.exchange(name), b.dlx(name)} {
		errs = append(errs, b.declare(ctx, func(ch *amqp.Channel) error { return ignoreNotFound(ch.ExchangeDelete(x, false, false)) }))
	}
	return errors.Join(errs...)
}

func ignoreNotFound(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return nil
	}
	return err
}

// isNotFound reports a channel closed with 404 NOT_FOUND.
func isNotFound(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound
}

// encode is m as an AMQP message: persistent, its id the message-id.
func encode(m mq.Message) amqp.Publishing {
	h := amqp.Table{}
	for k, v := range m.Headers {
		h[headerPrefix+k] = v
	}
	return amqp.Publishing{MessageId: m.ID, Body: m.Payload, Headers: h, DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream"}
}

// decode is an AMQP message back as the kit's.
func decode(id string, body []byte, headers amqp.Table) mq.Message {
	m := mq.Message{ID: id, Payload: body}
	for k, v := range headers {
		if name, ok := strings.CutPrefix(k, headerPrefix); ok {
			if m.Headers == nil {
				m.Headers = map[string]string{}
			}
			m.Headers[name] = fmt.Sprint(v)
		}
	}
	return m
}

// Publish publishes m on topic, mandatory and persistent, and waits for
// its publisher confirm.
func (b *Broker) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return b.publish(ctx, b.exchange(topic), routingKey, encode(m))
}

// PublishUnroutable publishes m on topic's exchange under a routing key
// nothing binds, mandatory: the broker returns it (basic.return, 312
// NO_ROUTE) and then confirms it positively.
func (b *Broker) PublishUnroutable(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	return b.publish(ctx, b.exchange(topic), "unbound-"+nonce(), encode(m))
}

// publish sends one mandatory publish and waits for its confirm. A return
// before the confirm is ErrReturned, a nack ErrNacked.
func (b *Broker) publish(ctx context.Context, x, key string, p amqp.Publishing) (mq.PublishAck, error) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	ch, err := b.publisher(ctx)
	if err != nil {
		return mq.PublishAck{}, err
	}
	// What an earlier, abandoned publish left behind is not this one's.
	drain(b.confirm, b.returns)
	seq := ch.GetNextPublishSeqNo()
	if err := ch.PublishWithContext(ctx, x, key, true, false, p); err != nil {
		return mq.PublishAck{}, fmt.Errorf("basic.publish: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			// The confirm may still come: the outcome is unknown.
			b.dropPublisher(ch)
			return mq.PublishAck{}, fmt.Errorf("no publisher confirm for publish #%d: %w", seq, ctx.Err())
		case c, ok := <-b.confirm:
			if !ok {
				b.dropPublisher(ch)
				return mq.PublishAck{}, fmt.Errorf("the channel closed before the confirm of publish #%d came: the outcome is unknown", seq)
			}
			if c.DeliveryTag < seq {
				continue
			}
			var ret *amqp.Return
			select {
			case r := <-b.returns:
				ret = &r
			default:
			}
			if ret != nil && !b.opts.IgnoreReturns {
				return mq.PublishAck{}, fmt.Errorf("%w (basic.return %d %s, exchange %s, routing key %s, before a positive confirm #%d)", mq.ErrReturned, ret.ReplyCode, ret.ReplyText, ret.Exchange, ret.RoutingKey, seq)
			}
			if !c.Ack && !b.opts.NackIsAck {
				return mq.PublishAck{}, fmt.Errorf("%w (basic.nack of publish #%d)", mq.ErrNacked, seq)
			}
			return mq.PublishAck{Position: fmt.Sprintf("confirm #%d", seq)}, nil
		}
	}
}

// dropPublisher closes the publishing channel after a publish whose
// confirm never came, so the next publish starts on a clean one.
func (b *Broker) dropPublisher(ch *amqp.Channel) {
	b.mu.Lock()
	if b.pub == ch {
		b.pub = nil
	}
	b.mu.Unlock()
	_ = ch.Close()
}

func drain(c chan amqp.Confirmation, r chan amqp.Return) {
	for {
		select {
		case <-c:
		case <-r:
		default:
			return
		}
	}
}

// ReadAll reads the topic's log (its stream) from the first entry to a
// marker the kit appends first: everything confirmed before the call is
// before the marker. Markers are the kit's own and left out.
func (b *Broker) ReadAll(ctx context.Context, topic string) ([]mq.Stored, error) {
	log := b.logQueue(topic)
	marker := nonce()
	mark := amqp.Publishing{Headers: amqp.Table{headerMarker: marker}, DeliveryMode: amqp.Persistent}
	// Is the stream there? A passive declare says so definitely.
	if err := b.declare(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(log, true, false, false, false, amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeStream})
		return err
	}); err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("stream %s: %w", log, mq.ErrNotFound)
		}
		return nil, fmt.Errorf("queue.declare(passive) %s: %w", log, err)
	}
	// The marker goes straight to the stream (the default exchange), not
	// to the topic's queue. Just after a node restart a stream that is
	// still recovering refuses it (returned, or nack'd): it is asked again.
	for {
		_, err := b.publish(ctx, "", log, mark)
		if err == nil {
			break
		}
		if !errors.Is(err, mq.ErrReturned) && !errors.Is(err, mq.ErrNacked) {
			return nil, fmt.Errorf("appending the read marker to %s: %w", log, err)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("appending the read marker to %s: %w (last refusal: %v)", log, ctx.Err(), err)
		case <-t.C:
		}
	}
	ch, err := b.channel(ctx)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	if err := ch.Qos(500, 0, false); err != nil {
		return nil, err
	}
	tag := "read-" + marker
	ds, err := ch.ConsumeWithContext(ctx, log, tag, false, false, false, false, amqp.Table{"x-stream-offset": "first"})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("stream %s: %w", log, mq.ErrNotFound)
		}
		return nil, fmt.Errorf("basic.consume %s: %w", log, err)
	}
	var out []mq.Stored
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reading %s: the marker did not come: %w", log, ctx.Err())
		case d, ok := <-ds:
			if !ok {
				return nil, fmt.Errorf("reading %s: the channel closed before the marker", log)
			}
			// Acked as read: the node's consumer_timeout must not close the
			// channel under a long read.
			_ = d.Ack(false)
			if v, isMarker := d.Headers[headerMarker]; isMarker {
				if v == marker {
					_ = ch.Cancel(tag, false)
					return out, nil
				}
				continue
			}
			out = append(out, mq.Stored{Message: decode(d.MessageId, d.Body, d.Headers), Position: fmt.Sprintf("log offset %v", d.Headers["x-stream-offset"])})
		}
	}
}

// queueOf is the queue a member of group reads, declared for a group with
// a max-deliver.
func (b *Broker) queueOf(ctx context.Context, topic string, cfg mq.ConsumerConfig) (string, error) {
	if cfg.MaxDeliver <= 0 {
		return b.topicQueue(topic), nil
	}
	q := b.groupQueue(topic, cfg.Group)
	args := amqp.Table{
		amqp.QueueTypeArg: amqp.QueueTypeQuorum,
		// The limit counts returns: a delivery count above it drops the
		// message, so N deliveries are limit N-1.
		"x-delivery-limit":       cfg.MaxDeliver - 1,
		"x-dead-letter-exchange": b.dlx(topic),
		// Deleted with the topic by the handle that opened it; one opened
		// by another handle, or left by a kit that died, goes by itself
		// after an hour unused, so a team's server keeps nothing of it.
		amqp.QueueTTLArg: int64(time.Hour / time.Millisecond),
	}
	if b.opts.DeliveryLimitOffByOne {
		args["x-delivery-limit"] = cfg.MaxDeliver
	}
	return q, b.declare(ctx, func(ch *amqp.Channel) error { return b.queue(ch, q, b.exchange(topic), args) })
}

// Consumer opens a member of cfg.Group on topic on its own connection.
// AckWait is the node's consumer_timeout, not the member's: RabbitMQ has no
// per-member ack wait (the kit's own server runs consumer_timeout at it).
// Backoff has no RabbitMQ counterpart.
func (b *Broker) Consumer(ctx context.Context, topic string, cfg mq.ConsumerConfig) (mq.Consumer, error) {
	if cfg.Group == "" {
		return nil, errors.New("a consumer needs a group")
	}
	q, err := b.queueOf(ctx, topic, cfg)
	if err != nil {
		return nil, err
	}
	conn, err := dial(ctx, b.url, b.opts.TLS)
	if err != nil {
		return nil, err
	}
	c := &consumer{b: b, conn: conn, topic: topic, queue: q}
	if _, err := c.channel(); err != nil {
		_ = conn.Close()
		if isNotFound(err) {
			return nil, fmt.Errorf("queue %s: %w", q, mq.ErrNotFound)
		}
		return nil, err
	}
	b.membersMu.Lock()
	b.members = append(b.members, c)
	b.membersMu.Unlock()
	return c, nil
}

// WatchMaxDeliver sends the position of every message group's queue
// dead-lettered for its delivery limit, read from the topic's dead-letter
// queue, until ctx ends.
func (b *Broker) WatchMaxDeliver(ctx context.Context, topic, group string) (<-chan string, error) {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		seen := map[string]bool{}
		t := time.NewTicker(b.opts.Poll * 5)
		defer t.Stop()
		for {
			dls, err := b.DeadLetters(ctx, topic, group)
			if err == nil {
				for _, d := range dls {
					if d.Reason == "delivery_limit" && !seen[d.Position] {
						seen[d.Position] = true
						select {
						case out <- d.Position:
						case <-ctx.Done():
							return
						}
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return out, nil
}

// DeadLetters reads the topic's dead-letter queue (each message fetched
// and put back, so a later read sees it again) and keeps what group's
// queue dead-lettered, with its x-death reason and count.
func (b *Broker) DeadLetters(ctx context.Context, topic, group string) ([]mq.DeadLetter, error) {
	ch, err := b.channel(ctx)
	if err != nil {
		return nil, err
	}
	// Closing the channel puts back every message fetched on it.
	defer ch.Close()
	dq, from := b.deadQueue(topic), b.groupQueue(topic, group)
	var out []mq.DeadLetter
	for {
		d, ok, err := ch.Get(dq, false)
		if err != nil {
			if isNotFound(err) {
				return nil, fmt.Errorf("dead-letter queue %s: %w", dq, mq.ErrNotFound)
			}
			return nil, fmt.Errorf("basic.get %s: %w", dq, err)
		}
		if !ok {
			return out, nil
		}
		dl := mq.DeadLetter{Stored: mq.Stored{Message: decode(d.MessageId, d.Body, d.Headers), Position: "dead-letter " + d.MessageId}}
		deaths, _ := d.Headers["x-death"].([]any)
		for _, x := range deaths {
			t, _ := x.(amqp.Table)
			if t == nil || t["queue"] != from {
				continue
			}
			dl.Queue, _ = t["queue"].(string)
			dl.Reason, _ = t["reason"].(string)
			if n, ok := t["count"].(int64); ok {
				dl.Count = int(n)
			}
			out = append(out, dl)
			break
		}
	}
}

// Close closes the handle and every member it opened.
func (b *Broker) Close() error {
	b.membersMu.Lock()
	ms := b.members
	b.members = nil
	b.membersMu.Unlock()
	for _, c := range ms {
		_ = c.Close()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		return nil
	}
	err := b.conn.Close()
	if errors.Is(err, amqp.ErrClosed) {
		err = nil
	}
	return err
}

// consumer is one member: its own connection, one channel at a time (a
// consumer_timeout closes it; the next Fetch opens another).
type consumer struct {
	b     *Broker
	conn  *amqp.Connection
	topic string
	queue string

	mu     sync.Mutex
	ch     *amqp.Channel
	closed bool // by Close: a crash, never reconnected

	// emptyAt is when the member's last basic.get was answered "nothing
	// there" (Fetch's goroutine only).
	emptyAt time.Time
}

// channel is the member's open channel, a new one if the server closed
// the last.
func (c *consumer) channel() (*amqp.Channel, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil && !c.ch.IsClosed() {
		return c.ch, nil
	}
	if c.closed {
		return nil, errors.New("the member was closed")
	}
	if c.conn.IsClosed() {
		// The server (or the network) closed it, not the kit: the member
		// connects again, as a client library does; what it held went back
		// to the queue with the old connection.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := dial(ctx, c.b.url, c.b.opts.TLS)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("the member's connection closed and could not be opened again: %w", err)
		}
		c.conn = conn
	}
	ch, err := c.conn.Channel()
	if err != nil {
		return nil, err
	}
	// A passive declare: the queue is there, and the channel works.
	if _, err := ch.QueueDeclarePassive(c.queue, true, false, false, false, nil); err != nil {
		return nil, err
	}
	c.ch = ch
	return ch, nil
}

// Fetch pulls up to max messages (basic.get), waiting up to wait for the
// first and asking again every Poll.
func (c *consumer) Fetch(ctx context.Context, max int, wait time.Duration) ([]mq.Delivery, error) {
	if max <= 0 {
		max = 1
	}
	deadline := time.Now().Add(wait)
	for {
		ch, err := c.channel()
		if err != nil {
			if isNotFound(err) {
				return nil, fmt.Errorf("queue %s: %w", c.queue, mq.ErrNotFound)
			}
			return nil, err
		}
		var ds []mq.Delivery
		for len(ds) < max {
			d, ok, err := ch.Get(c.queue, false)
			if err != nil {
				if len(ds) > 0 {
					return ds, nil
				}
				return nil, fmt.Errorf("basic.get %s: %w", c.queue, err)
			}
			if !ok {
				c.emptyAt = time.Now()
				break
			}
			ds = append(ds, c.delivery(ch, d))
		}
		if len(ds) > 0 || !time.Now().Before(deadline) {
			return ds, nil
		}
		t := time.NewTimer(min(c.b.opts.Poll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (c *consumer) delivery(ch *amqp.Channel, d amqp.Delivery) *delivery {
	attempt := 1
	if n, ok := d.Headers["x-delivery-count"].(int64); ok {
		attempt = int(n) + 1
	} else if d.Redelivered {
		attempt = 2
	}
	return &delivery{c: c, ch: ch, d: d, attempt: attempt, msg: decode(d.MessageId, d.Body, d.Headers), lookedBefore: c.emptyAt}
}

// Close ends the member as a crash would: its connection closes and the
// broker puts back what it held, unacknowledged.
func (c *consumer) Close() error {
	c.mu.Lock()
	c.closed = true
	conn := c.conn
	c.mu.Unlock()
	err := conn.Close()
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}

type delivery struct {
	c       *consumer
	ch      *amqp.Channel
	d       amqp.Delivery
	attempt int
	msg     mq.Message

	lookedBefore time.Time
}

// LookedBefore is when the server last answered this member that nothing
// was there, before the basic.get that brought this delivery. The kit
// polls: a redelivery seen late whose previous empty answer came in time
// was late on the way (round trips on a loaded host), not proven late at
// the server.
func (d *delivery) LookedBefore() time.Time { return d.lookedBefore }

func (d *delivery) Message() mq.Message { return d.msg }
func (d *delivery) Attempt() int        { return d.attempt }
func (d *delivery) Position() string {
	return fmt.Sprintf("%s delivery-tag %d", d.c.queue, d.d.DeliveryTag)
}

// settle sends one settle and proves the server took it: a synchronous
// round trip on the same channel comes back only if the server did not
// close the channel over the settle. A delivery of a channel that is gone
// cannot be settled (the server put it back when the channel closed).
func (d *delivery) settle(what string, send func() error) error {
	if d.c.b.opts.FireAndForgetAck {
		_ = send()
		return nil
	}
	if err := send(); err != nil {
		return fmt.Errorf("%s of delivery-tag %d: %w (its channel closed: the broker put the message back)", what, d.d.DeliveryTag, err)
	}
	if _, err := d.ch.QueueDeclarePassive(d.c.queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("%s of delivery-tag %d not taken: the server closed the channel: %w", what, d.d.DeliveryTag, err)
	}
	return nil
}

// Ack is basic.ack: the quorum queue removes the message.
func (d *delivery) Ack(context.Context) error {
	return d.settle("basic.ack", func() error { return d.d.Ack(false) })
}

// Nak is basic.nack with requeue: the message goes back at once and its
// delivery count grows. RabbitMQ has no delayed requeue.
func (d *delivery) Nak(_ context.Context, delay time.Duration) error {
	if delay > 0 {
		return fmt.Errorf("%w: basic.nack with requeue puts the message back at once; RabbitMQ has no redelivery delay", mq.ErrUnsupported)
	}
	return d.settle("basic.nack(requeue)", func() error { return d.d.Nack(false, !d.c.b.opts.NakDrops) })
}

// Term is basic.reject without requeue: the queue drops the message, or
// dead-letters it where the queue has a dead-letter exchange.
func (d *delivery) Term(context.Context) error {
	return d.settle("basic.reject(requeue=false)", func() error { return d.d.Reject(d.c.b.opts.TermRequeues) })
}

// InProgress: RabbitMQ cannot push a delivery's deadline back.
func (d *delivery) InProgress(context.Context) error {
	return fmt.Errorf("%w: RabbitMQ has no in-progress: consumer_timeout counts from the delivery, for the whole node", mq.ErrUnsupported)
}

func nonce() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
