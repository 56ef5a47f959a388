package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	samqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/onceproof/tck/mq"
)

// This file is the stream protocol side of a topic (rabbitmq_stream, the
// protocol's own port): a named producer publishing into the topic's log
// with publishing ids, which the stream de-dupes by producer name and
// publishing id, with no window and across a producer restart (the broker
// keeps the highest publishing id per name). Only a server whose stream
// port the kit knows has it: its own.

var _ mq.NamedProducers = (*Broker)(nil)

// NamedProducer starts producer name on topic's log over the stream
// protocol.
func (b *Broker) NamedProducer(ctx context.Context, topic, name string) (mq.SequencedProducer, error) {
	if b.opts.StreamURL == "" {
		return nil, fmt.Errorf("%w: the stream protocol port of this server is not known to the kit", mq.ErrUnsupported)
	}
	if b.opts.FreshProducerName {
		name += "-" + nonce()
	}
	env, err := stream.NewEnvironment(stream.NewEnvironmentOptions().SetUri(b.opts.StreamURL).SetRPCTimeout(10 * time.Second))
	if err != nil {
		return nil, fmt.Errorf("stream protocol connection: %s", scrub(err.Error(), b.opts.StreamURL))
	}
	p, err := env.NewProducer(b.logQueue(topic), stream.NewProducerOptions().SetProducerName(name))
	if err != nil {
		_ = env.Close()
		return nil, fmt.Errorf("stream producer %s on %s: %s", name, b.logQueue(topic), scrub(err.Error(), b.opts.StreamURL))
	}
	sp := &streamProducer{env: env, p: p, confirms: p.NotifyPublishConfirmation(), name: name}
	return sp, nil
}

// streamProducer is one named producer; one publish at a time.
type streamProducer struct {
	env      *stream.Environment
	p        *stream.Producer
	confirms stream.ChannelPublishConfirm
	name     string
	mu       sync.Mutex
}

// Publish sends m with publishing id seq and waits for its confirm. The
// stream confirms a duplicate too, without storing it: the reply cannot
// say which it was.
func (s *streamProducer) Publish(ctx context.Context, seq int64, m mq.Message) (mq.PublishAck, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := samqp.NewMessage(m.Payload)
	msg.Properties = &samqp.MessageProperties{MessageID: m.ID}
	msg.SetPublishingId(seq)
	if err := s.p.Send(msg); err != nil {
		return mq.PublishAck{}, fmt.Errorf("stream publish %d: %w", seq, err)
	}
	for {
		select {
		case <-ctx.Done():
			return mq.PublishAck{}, fmt.Errorf("no stream confirm for publishing id %d: %w", seq, ctx.Err())
		case sts, ok := <-s.confirms:
			if !ok {
				return mq.PublishAck{}, errors.New("the stream producer closed before the confirm came")
			}
			for _, st := range sts {
				if st.GetMessage().GetPublishingId() != seq {
					continue
				}
				if !st.IsConfirmed() {
					return mq.PublishAck{}, fmt.Errorf("%w (stream publishing id %d: %v)", mq.ErrNacked, seq, st.GetError())
				}
				return mq.PublishAck{Position: fmt.Sprintf("producer %s publishing id %d", s.name, seq)}, nil
			}
		}
	}
}

// Close ends the producer and its connection.
func (s *streamProducer) Close() error {
	return errors.Join(s.p.Close(), s.env.Close())
}
