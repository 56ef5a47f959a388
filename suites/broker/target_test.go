package broker_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// embedded starts the kit's embedded NATS target with client and binds the
// suite to it, as the registry does; the server stops when t ends.
func embedded(t testing.TB, client nats.Client) broker.Target {
	t.Helper()
	nt, err := nats.EmbeddedTarget(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nt.Stop() })
	return bind(nt)
}

// bind is the suite's Target for a NATS target.
func bind(nt *nats.Target) broker.Target {
	tg := broker.Target{
		Open: func(ctx context.Context) (mq.Broker, error) { return nt.Client.Open(ctx, nt.URL) },
		Caps: nt.Caps,
	}
	if px := nt.Proxy; px != nil {
		tg.Fault = &broker.Fault{Addr: px.Addr, OpenVia: px.OpenVia, Split: px.Split,
			PublishReply: func(topic string) broker.Match { return px.PublishReply(topic) }}
	}
	if nt.Private != nil {
		tg.Private = func(ctx context.Context) (broker.Server, error) {
			s, err := nt.Private(ctx)
			if err != nil {
				return nil, err
			}
			return server{s}, nil
		}
	}
	if nt.Disrupt != nil {
		tg.Disrupt = func(ctx context.Context, rule, topic string, log broker.Log) error {
			return nt.Disrupt(ctx, rule, topic, log)
		}
	}
	return tg
}

type server struct{ nats.Server }

func (s server) Restart(ctx context.Context, how broker.Restart) error {
	return s.Server.Restart(ctx, how == broker.Abrupt)
}
