package registry

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/faultproxy"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

func init() { extra = append(extra, addBrokers) }

func addBrokers(r *target.Registry) {
	r.Add(target.Kind{
		Suite: "broker", Name: "nats",
		Summary: "NATS JetStream through nats.go/jetstream: an embedded nats-server, or a server at nats://[user:password@]host:port",
		Modes:   []target.Mode{target.Embedded, target.External, target.Container},
		Needs:   "nothing (embedded); a nats-server with JetStream for a URL; Docker and the image nats:2.15.2 (TCK_NATS_IMAGE; `make images` builds it) for =container",
		Default: true, Reference: true,
		Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
			if ref.Mode() == target.Container {
				return natsContainer(ctx, ref, NATSClient{}) // containers.go
			}
			if ref.Mode() == target.Embedded {
				return NATSEmbedded(ctx, ref, NATSClient{})
			}
			return NATSAt(ctx, ref, ref.Address, nil)
		},
	})
	addBrokerMutants(r)
}

// NATSClient is how the kit's client talks to a NATS server: the adapter's
// options and, for a mutant, the defect wrapped around every handle.
type NATSClient struct {
	Options nats.Options
	Wrap    func(mq.Broker) mq.Broker
	// Declare adjusts what the target declares (a mutant that claims what
	// it does not have).
	Declare func(mq.Capabilities) mq.Capabilities
}

func (c NATSClient) open(ctx context.Context, url string) (mq.Broker, error) {
	b, err := nats.Connect(ctx, url, c.Options)
	if err != nil || c.Wrap == nil {
		return b, err
	}
	return c.Wrap(b), nil
}

// NATSEmbedded starts an in-process nats-server and binds the suite to it.
// Rules that restart a server get an embedded server of their own.
func NATSEmbedded(ctx context.Context, ref target.Ref, client NATSClient) (*target.Started, error) {
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	st, err := natsStarted(ctx, ref, e.URL(), client, e.Stop, func(ctx context.Context) (broker.Server, error) {
		return natsPrivate(ctx, client)
	})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	st.Info.Address = "embedded " + e.URL()
	st.Info.Version = "nats-server " + nats.Version + " (embedded), nats.go " + natsClientVersion
	st.Info.Config["sync"] = e.Sync().String()
	return st, nil
}

// NATSAt binds the suite to a nats-server reachable at url: an external
// server, or a container another file started (stop releases it). It checks
// the server is reachable and has JetStream for the account first; a
// failure is target.Unavailable (exit 4) with credentials redacted. The kit
// cannot restart a server it did not start, so BR-1.7 and BR-3.1 are
// not-applicable there.
func NATSAt(ctx context.Context, ref target.Ref, url string, stop func() error) (*target.Started, error) {
	return natsStarted(ctx, ref, url, NATSClient{}, stop, nil)
}

func natsStarted(ctx context.Context, ref target.Ref, addr string, client NATSClient, stop func() error,
	private func(ctx context.Context) (broker.Server, error)) (*target.Started, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	probe, err := client.open(cctx, addr)
	if err != nil {
		return nil, target.Unavailable(ref, redact.Error(err, redact.Secrets(addr)...))
	}
	caps := probe.Capabilities()
	_ = probe.Close()
	if client.Declare != nil {
		caps = client.Declare(caps)
	}
	if stop == nil {
		stop = func() error { return nil }
	}
	t := broker.Target{
		Open:    func(ctx context.Context) (mq.Broker, error) { return client.open(ctx, addr) },
		Caps:    caps,
		Fault:   natsFault(addr, client),
		Private: private,
	}
	t.Windows = broker.Windows{}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(addr),
			Version: "nats.go " + natsClientVersion,
			Config:  brokerConfig(caps, t),
		},
		Register: func() { broker.Register(t) },
		Stop:     stop,
	}, nil
}

// brokerConfig is what the target declares, in real units, for the report.
func brokerConfig(c mq.Capabilities, t broker.Target) map[string]string {
	w := broker.DefaultWindows()
	var rs, rr []string
	for _, r := range c.Retentions {
		rs = append(rs, string(r))
	}
	for _, r := range c.DedupeAfterRestart {
		rr = append(rr, string(r))
	}
	return map[string]string{
		"dedupeWindow":       c.DedupeWindow.String(),
		"dedupeRefreshOnHit": boolString(c.DedupeRefreshOnHit),
		"dedupeAfterRestart": strings.Join(rr, ", "),
		"ackWait":            w.AckWait.String(),
		"nakDelay":           w.NakDelay.String(),
		"maxDeliver":         fmt.Sprint(w.MaxDeliver),
		"tolerance":          w.Tolerance.String(),
		"totalQueueMessages": fmt.Sprint(w.Messages),
		"retentions":         strings.Join(rs, ", "),
		"storage":            "file",
		"restartable":        boolString(t.Private != nil),
	}
}

// natsFault puts the kit's proxy between a client and the server: it knows
// the NATS framing and what a JetStream publish reply looks like.
func natsFault(addr string, client NATSClient) *broker.Fault {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return nil
	}
	return &broker.Fault{
		Addr: u.Host,
		OpenVia: func(ctx context.Context, proxy string) (mq.Broker, error) {
			v := *u
			v.Host = proxy
			return client.open(ctx, v.String())
		},
		Split: faultproxy.NATS,
		PublishReply: func(topic string) faultproxy.Match {
			want := []byte(`"stream":"` + nats.StreamName(topic) + `"`)
			return func(frame []byte) bool {
				p := faultproxy.NATSPayload(frame)
				return p != nil && strings.Contains(string(p), string(want)) && strings.Contains(string(p), `"seq":`)
			}
		},
	}
}

// natsPrivate starts a rule's own server: a nats-server child process of
// the embedded version when a binary can be had (it can be killed, for the
// abrupt restart), else an embedded server (graceful restarts only).
func natsPrivate(ctx context.Context, client NATSClient) (broker.Server, error) {
	bin, binErr := nats.Binary(ctx)
	if binErr == nil {
		p, err := nats.StartProcess(ctx, bin, nats.Sync{})
		if err == nil {
			return &natsProcess{p: p, client: client}, nil
		}
		binErr = err
	}
	pe, err := nats.StartEmbedded(ctx)
	if err != nil {
		return nil, err
	}
	return &natsServer{e: pe, client: client, why: binErr}, nil
}

// natsProcess is a rule's own nats-server child process.
type natsProcess struct {
	p      *nats.Process
	client NATSClient
}

func (s *natsProcess) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.open(ctx, s.p.URL())
}

func (s *natsProcess) Restart(ctx context.Context, how broker.Restart) error {
	return s.p.Restart(ctx, how == broker.Abrupt)
}

func (s *natsProcess) Sync(ctx context.Context) (string, bool, error) {
	sy, err := s.p.Sync(ctx)
	if err != nil {
		return "", false, err
	}
	return sy.String() + " (read from the child nats-server's /varz)", sy.CanLoseAcked(), nil
}

func (s *natsProcess) Stop() error { return s.p.Stop() }

// natsServer is a rule's own embedded server.
type natsServer struct {
	e      *nats.Embedded
	client NATSClient
	why    error // why no child process could be used
}

func (s *natsServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.open(ctx, s.e.URL())
}

func (s *natsServer) Restart(ctx context.Context, how broker.Restart) error {
	if how == broker.Abrupt {
		return fmt.Errorf("%w: an embedded server lives in the kit's own process and cannot be killed without killing the kit, and no nats-server child process could be started (%v; set %s)",
			mq.ErrUnsupported, s.why, nats.BinaryEnv)
	}
	return s.e.Restart(ctx)
}

func (s *natsServer) Sync(context.Context) (string, bool, error) {
	sy := s.e.Sync()
	return sy.String(), sy.CanLoseAcked(), nil
}

func (s *natsServer) Stop() error { return s.e.Stop() }

const natsClientVersion = "v1.55.0"
