package cochannel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/onceproof/tck/internal/coservice"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
)

// OpenNATS creates, on the NATS server at natsURL (loopback, JetStream on), a
// stream "CO_<name>" on subject "onceproof.co.<name>" and a durable pull
// consumer with explicit acks, ackWait and maxDeliver. tlsCfg is the run's
// trust material, used where TLS is asked for (a tls:// URL, a server that
// requires it), by the kit's client and the proxies (tls.go).
func OpenNATS(ctx context.Context, natsURL, name string, ackWait time.Duration, maxDeliver int, tlsCfg *tls.Config) (coservice.Channel, error) {
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
	cons, err := js.CreateConsumer(cctx, c.stream, jetstream.ConsumerConfig{Durable: coservice.DurableName,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: maxDeliver, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		_ = js.DeleteStream(cctx, c.stream)
		nc.Close()
		return nil, fmt.Errorf("creating durable consumer %s on %s: %w", coservice.DurableName, c.stream, err)
	}
	c.cons = cons
	return c, nil
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
	addr, err := c.addr(worker, func(hook func() coservice.Hook, nextID func() int) (*relay, error) {
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
		coservice.EnvBroker:   coservice.BrokerNATS,
		coservice.EnvNATSURL:  pu.String(),
		coservice.EnvStream:   c.stream,
		coservice.EnvSubject:  c.subject,
		coservice.EnvConsumer: coservice.DurableName,
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

// Channel opens the rule's channel on a consumer service's broker, by kind
// (a coservice.Broker* value): url is the NATS or Redis server, or Kafka's
// comma-separated seeds. Kafka has no ack wait or max deliver of its own
// (a share group's are the cluster's, maxDeliver its delivery limit).
func Channel(ctx context.Context, kind, url, name string, ackWait time.Duration, maxDeliver int, tlsCfg *tls.Config) (coservice.Channel, error) {
	switch kind {
	case coservice.BrokerKafka:
		return OpenKafka(ctx, strings.Split(url, ","), name)
	case coservice.BrokerKafkaShare:
		return OpenKafkaShare(ctx, strings.Split(url, ","), name, maxDeliver)
	case coservice.BrokerRedis:
		return OpenRedis(ctx, url, name, tlsCfg)
	default:
		return OpenNATS(ctx, url, name, ackWait, maxDeliver, tlsCfg)
	}
}
