// Package process is the broker side of the consumer/process target: a
// consumer service the kit runs as its own process (`consumer/process=cmd:
// COMMAND`) reads NATS JetStream through the kit's proxy. For each rule it
// creates a stream and a durable pull consumer with the declared ack wait
// and max deliver, publishes the rule's events, reads the consumer back
// (what is still unacked), and gives each replica a proxy address of its
// own, whose hook sees the replica's pulls, deliveries and acks.
//
// The rules, the sinks and the process supervision are the consumer
// suite's (suites/consumer: Service); the contract a service implements is
// docs/consumer-service.md.
package process

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/consumer"
)

// Broker opens channels on the NATS server at URL.
type Broker struct {
	URL string // the server's client URL (loopback)
	// Addr is its host:port, which the proxies forward to.
	Addr string
}

// DurableName is the name of the durable consumer the kit creates in each
// rule's stream.
const DurableName = "onceproof-service"

// Open creates a stream "CO_<name>" on subject "onceproof.co.<name>" and a
// durable pull consumer with explicit acks, ackWait and maxDeliver.
func (b Broker) Open(ctx context.Context, name string, ackWait time.Duration, maxDeliver int) (consumer.Channel, error) {
	nc, err := nats.Connect(b.URL, nats.Name("onceproof kit (consumer/process)"), nats.Timeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", b.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	safe := strings.NewReplacer(".", "_", "@", "_", ":", "_", "*", "_", ">", "_", " ", "_").Replace(name)
	c := &channel{b: b, nc: nc, js: js, stream: "CO_" + safe, subject: "onceproof.co." + safe, wires: map[string]*wire{}}
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

type channel struct {
	b       Broker
	nc      *nats.Conn
	js      jetstream.JetStream
	cons    jetstream.Consumer
	stream  string
	subject string

	mu    sync.Mutex
	hook  consumer.WireHook
	wires map[string]*wire
	conns int
}

func (c *channel) Env(worker string) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.wires[worker]
	if !ok {
		var err error
		if w, err = startWire(worker, c.b.Addr, c.currentHook, c.nextConn); err != nil {
			return nil, fmt.Errorf("starting the proxy for %s: %w", worker, err)
		}
		c.wires[worker] = w
	}
	return map[string]string{
		consumer.EnvNATSURL:  w.url(),
		consumer.EnvStream:   c.stream,
		consumer.EnvSubject:  c.subject,
		consumer.EnvConsumer: DurableName,
	}, nil
}

func (c *channel) currentHook() consumer.WireHook {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hook
}

func (c *channel) nextConn() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conns++
	return c.conns
}

func (c *channel) Watch(h consumer.WireHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = h
}

// Publish sends m with its id as Nats-Msg-Id and the event id header.
func (c *channel) Publish(ctx context.Context, m mq.Message) (uint64, bool, error) {
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
func (c *channel) Outstanding(ctx context.Context) (int, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.cons.Info(ictx)
	if err != nil {
		return 0, err
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

// Close stops the proxies and deletes the stream.
func (c *channel) Close() error {
	c.mu.Lock()
	wires := c.wires
	c.wires = map[string]*wire{}
	c.mu.Unlock()
	var errs []error
	for _, w := range wires {
		errs = append(errs, w.close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.js.DeleteStream(ctx, c.stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		errs = append(errs, err)
	}
	c.nc.Close()
	return errors.Join(errs...)
}
