package registry

import (
	"context"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
	"github.com/onceproof/tck/target"
)

func init() { extra = append(extra, addBrokers) }

func addBrokers(r *target.Registry) {
	r.Add(target.Kind{
		Suite: "broker", Name: "nats",
		Summary: "NATS JetStream through nats.go/jetstream: an embedded nats-server, or a server at nats://host:port",
		Modes:   []target.Mode{target.Embedded, target.External},
		Needs:   "nothing (embedded); a nats-server with JetStream for a URL",
		Default: true,
		Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
			if ref.Mode() == target.Embedded {
				return natsEmbedded(ctx, ref, nats.Options{})
			}
			return NATSAt(ctx, ref, ref.Address, nil)
		},
	})
}

// natsEmbedded starts an in-process nats-server and binds the suite to it.
// Rules that restart a server get one of their own (Private).
func natsEmbedded(ctx context.Context, ref target.Ref, opts nats.Options) (*target.Started, error) {
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	st, err := NATSAt(ctx, ref, e.URL(), e.Stop)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	st.Info.Address = "embedded " + e.URL()
	st.Info.Version = "nats-server " + nats.Version + " (embedded)"
	st.Info.Config["sync"] = e.Sync().String()
	return st, nil
}

// NATSAt binds the suite to a nats-server reachable at url (external, or a
// container another file started; stop releases it). It checks the server
// is reachable and has JetStream for the account first: a failure is
// target.Unavailable (exit 4) with credentials redacted.
func NATSAt(ctx context.Context, ref target.Ref, url string, stop func() error) (*target.Started, error) {
	opts := nats.Options{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	probe, err := nats.ConnectBroker(cctx, url, opts)
	if err != nil {
		return nil, target.Unavailable(ref, target.RedactError(err, target.Password(url)))
	}
	caps := probe.Capabilities()
	_ = probe.Close()
	if stop == nil {
		stop = func() error { return nil }
	}
	t := broker.Target{
		Open: func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, url, opts) },
	}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(url),
			Version: "nats.go " + natsClientVersion,
			Config: map[string]string{
				"dedupeWindow": caps.DedupeWindow.String(),
				"ackWait":      "1s",
				"nakDelay":     "500ms",
				"maxDeliver":   "3",
				"retentions":   "limits, workqueue",
				"storage":      "file",
			},
		},
		Register: func() { broker.Register(t) },
		Stop:     stop,
	}, nil
}

const natsClientVersion = "v1.55.0"
