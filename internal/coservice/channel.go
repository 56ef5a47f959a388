package coservice

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
)

// DurableName is the name of the durable consumer the kit creates in each
// rule's stream.
const DurableName = "onceproof-service"

// Open creates, on the NATS server at natsURL (loopback, JetStream on), a
// stream "CO_<name>" on subject "onceproof.co.<name>" and a durable pull
// consumer with explicit acks, ackWait and maxDeliver. tlsCfg is the run's
// trust material, used where TLS is asked for (a tls:// URL, a server that
// requires it), by the kit's client and the proxies (tls.go).
func Open(ctx context.Context, natsURL, name string, ackWait time.Duration, maxDeliver int, tlsCfg *tls.Config) (Channel, error) {
	u, err := url.Parse(natsURL)
	if err != nil {
		return nil, fmt.Errorf("the broker's URL: %w", err)
	}
	opts := []nats.Option{nats.Name("onceproof kit (consumer/process)"), nats.Timeout(10 * time.Second)}
	if tlsCfg != nil {
		// Not nats.Secure: a plain server stays plain, as broker/nats does.
		opts = append(opts, func(o *nats.Options) error { o.TLSConfig = tlsCfg.Clone(); return nil })
	}
	nc, err := nats.Connect(natsURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", natsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	safe := strings.NewReplacer(".", "_", "@", "_", ":", "_", "*", "_", ">", "_", " ", "_").Replace(name)
	if tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12} // the system's roots
	}
	c := &natsChannel{url: u, tls: tlsCfg, nc: nc, js: js, stream: "CO_" + safe, subject: "onceproof.co." + safe}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: c.stream, Subjects: []string{c.subject},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("creating stream %s: %w", c.stream, err)
	}
	cons, err := js.CreateConsumer(cctx, c.stream, jetstream.ConsumerConfig{Durable: DurableName,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: maxDeliver, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		_ = js.DeleteStream(cctx, c.stream)
		nc.Close()
		return nil, fmt.Errorf("creating durable consumer %s on %s: %w", DurableName, c.stream, err)
	}
	c.cons = cons
	return c, nil
}

// Channel is one rule's stream (a NATS stream and durable consumer, a
// Redis stream key and consumer group) and the replicas' proxies in front
// of its broker.
type Channel interface {
	// Env is the broker's variables for one replica (each its own proxy
	// address, so the kit tells replicas apart on the wire).
	Env(worker string) (map[string]string, error)
	// Watch installs the hook that sees the service's broker traffic.
	Watch(h Hook)
	// Publish sends m (its id and headers as the broker carries them) and
	// returns its sequence (Event.Seq of its deliveries and acks) and
	// whether the broker took it as a duplicate.
	Publish(ctx context.Context, m mq.Message) (seq uint64, dup bool, err error)
	// Outstanding is what the broker still holds for the consumer: not yet
	// delivered plus delivered and not acked.
	Outstanding(ctx context.Context) (int, error)
	// Close stops the proxies and removes the stream from the broker.
	Close() error
}

// natsChannel is one rule's JetStream stream, consumer and proxies.
type natsChannel struct {
	url     *url.URL    // the server, whose host the proxies forward to
	tls     *tls.Config // the proxies' TLS toward a server that asks for it
	nc      *nats.Conn
	js      jetstream.JetStream
	cons    jetstream.Consumer
	stream  string
	subject string
	proxies
}

func (c *natsChannel) Env(worker string) (map[string]string, error) {
	addr, err := c.addr(worker, func(hook func() Hook, nextID func() int) (*relay, error) {
		w, err := startWire(worker, c.url.Host, natsTLSDial(c.tls, c.url.Scheme == "tls"), hook, nextID)
		if err != nil {
			return nil, err
		}
		return w.relay, nil
	})
	if err != nil {
		return nil, fmt.Errorf("starting the proxy for %s: %w", worker, err)
	}
	pu := *c.url // the server's credentials, the proxy's address
	pu.Host = addr
	pu.Scheme = "nats" // the proxy speaks plain text to the service (tls.go)
	return map[string]string{
		EnvBroker:   BrokerNATS,
		EnvNATSURL:  pu.String(),
		EnvStream:   c.stream,
		EnvSubject:  c.subject,
		EnvConsumer: DurableName,
	}, nil
}

// Publish sends m with its id as Nats-Msg-Id and the event id header.
func (c *natsChannel) Publish(ctx context.Context, m mq.Message) (uint64, bool, error) {
	msg := nats.NewMsg(c.subject)
	msg.Data = m.Payload
	msg.Header.Set(jetstream.MsgIDHeader, m.ID)
	for k, v := range m.Headers {
		msg.Header.Set(k, v)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ack, err := c.js.PublishMsg(pctx, msg)
	if err != nil {
		return 0, false, err
	}
	return ack.Sequence, ack.Duplicate, nil
}

// Outstanding is the consumer's pending (not yet delivered) plus its ack
// pending (delivered, not acked), as the server reports them.
func (c *natsChannel) Outstanding(ctx context.Context) (int, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.cons.Info(ictx)
	if err != nil {
		return 0, err
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

// Close stops the proxies and deletes the stream.
func (c *natsChannel) Close() error {
	errs := []error{c.closeAll()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.js.DeleteStream(ctx, c.stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		errs = append(errs, err)
	}
	c.nc.Close()
	return errors.Join(errs...)
}
