package nats

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/onceproof/tck/internal/faultproxy"
	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// This file is the broker/nats target as the kit starts it: a server (in
// this process, in a container, a three-node cluster, or one at a URL), the
// client the kit reaches it with, and what the kit may do to it. The
// registry binds a Target to the broker suite; nothing here knows the CLI.

// Client is how the kit's handles talk to a server: the adapter's options
// and, for a mutant, the defect wrapped around every handle.
type Client struct {
	Options Options
	Wrap    func(mq.Broker) mq.Broker
	// Declare adjusts what the target declares (a mutant that claims what
	// it does not have).
	Declare func(mq.Capabilities) mq.Capabilities
}

// Open opens a handle on the server at url.
func (c Client) Open(ctx context.Context, url string) (mq.Broker, error) {
	b, err := Connect(ctx, url, c.Options)
	if err != nil || c.Wrap == nil {
		return b, err
	}
	return c.Wrap(b), nil
}

// Target is a NATS server the kit checks, opened by Open or started by
// Run, RunEmbedded or RunCluster.
type Target struct {
	mq.Info
	Client Client
	// Proxy, when set, reaches the server through the kit's fault proxy.
	Proxy *Proxy
	// Private, when set, starts a server of a rule's own that the rule may
	// restart (nil: the kit cannot restart this server).
	Private func(ctx context.Context) (Server, error)
	// Disrupt, when set, is the fault the target injects during the
	// total-queue rule (see Cluster.KillStreamLeader).
	Disrupt func(ctx context.Context, rule, topic string, log Log) error
	// Only, when set, lists the rules this target is meant for; OnlyWhy is
	// why the others are not applicable on it.
	Only    []string
	OnlyWhy string
	// Budget, when set, is the run's time budget this target needs.
	Budget time.Duration
	// Stop releases everything the start created.
	Stop func() error
}

// Option says how Open, Run, RunEmbedded and RunCluster reach the server.
type Option func(*settings)

type settings struct{ client Client }

// WithClient sets how the kit's handles talk to the server: the adapter's
// options and, for a mutant, the defect wrapped around every handle.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithTLS sets the client's TLS configuration (docs/tls.md), after any
// WithClient.
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.client.Options.TLS = cfg } }

// Log is where a fault notes what it did: the rule's timeline and evidence.
// It is the broker suite's Log (one interface), so the suite's value is
// passed straight through.
type Log = verdict.Log

// Server is a server of a rule's own.
type Server interface {
	Open(ctx context.Context) (mq.Broker, error)
	// Restart stops and starts the server on the same store: gracefully
	// (it flushes) or abruptly (SIGKILL). It returns an error wrapping
	// mq.ErrUnsupported for a kind it cannot do.
	Restart(ctx context.Context, abrupt bool) error
	// Sync reads the server's durability setting: how it is spelled, and
	// whether it can lose acknowledged writes on power loss.
	Sync(ctx context.Context) (setting string, canLoseAcked bool, err error)
	Stop() error
}

// Proxy is how to reach the server through the kit's fault proxy.
type Proxy struct {
	Addr    string // the server's host:port, where the proxy forwards to
	OpenVia func(ctx context.Context, addr string) (mq.Broker, error)
	// Split cuts the server-to-client byte stream into NATS frames.
	Split func(buf []byte) int
	// PublishReply matches the frame carrying JetStream's reply to a
	// publish on topic.
	PublishReply func(topic string) func(frame []byte) bool
}

// RunEmbedded starts an in-process nats-server. Rules that restart a
// server get one of their own (a child process where a nats-server binary
// can be had, so it can be killed; else an embedded one).
func RunEmbedded(ctx context.Context, opts ...Option) (*Target, error) {
	client := options.Apply(opts).client
	e, err := StartEmbedded(ctx)
	if err != nil {
		return nil, err
	}
	t, err := newTarget(ctx, e.URL(), client, e.Stop)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	t.Address = "embedded " + e.URL()
	t.Version = "nats-server " + Version + " (embedded), nats.go " + ClientVersion()
	t.Config["sync"] = e.Sync().String()
	t.Private = func(ctx context.Context) (Server, error) { return startPrivate(ctx, client) }
	t.Config["restartable"] = "true"
	return t, nil
}

// Open binds the kit to a nats-server reachable at url. It checks the
// server answers and has JetStream for the account; errors carry no
// credential. The kit cannot restart a server it did not start.
func Open(ctx context.Context, url string, opts ...Option) (*Target, error) {
	t, err := newTarget(ctx, url, options.Apply(opts).client, nil)
	if err != nil {
		return nil, err
	}
	t.Version = "nats.go " + ClientVersion()
	return t, nil
}

// newTarget probes the server at addr for its capabilities.
func newTarget(ctx context.Context, addr string, client Client, stop func() error) (*Target, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	probe, err := client.Open(cctx, addr)
	if err != nil {
		return nil, redact.Error(err, redact.Secrets(addr)...)
	}
	caps := probe.Capabilities()
	_ = probe.Close()
	if client.Declare != nil {
		caps = client.Declare(caps)
	}
	if stop == nil {
		stop = func() error { return nil }
	}
	t := &Target{
		Info: mq.Info{URL: addr, Caps: caps,
			Config: map[string]string{"storage": storage(client.Options), "restartable": "false"}},
		Client: client, Stop: stop,
	}
	if client.Options.TLS != nil || strings.HasPrefix(strings.ToLower(addr), "tls://") {
		// The fault proxy finds a publish's reply by reading NATS frames,
		// which TLS hides from it.
		t.Config["tls"] = "required"
		t.Notes = append(t.Notes, "TLS: the kit's fault proxy reads NATS frames in plain text, so the rules that drop a publish's reply do not apply over TLS")
	} else {
		t.Proxy = proxyFor(addr, client)
	}
	return t, nil
}

func storage(o Options) string {
	if o.Memory {
		return "memory"
	}
	return "file"
}

// proxyFor puts the kit's fault proxy between a client and the server: it
// knows the NATS framing and what a JetStream publish reply looks like. A
// URL listing several servers (a cluster) has no one address to proxy.
func proxyFor(addr string, client Client) *Proxy {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || strings.Contains(addr, ",") {
		return nil
	}
	return &Proxy{
		Addr: u.Host,
		OpenVia: func(ctx context.Context, proxy string) (mq.Broker, error) {
			v := *u
			v.Host = proxy
			return client.Open(ctx, v.String())
		},
		Split: faultproxy.NATS,
		PublishReply: func(topic string) func(frame []byte) bool {
			want := `"stream":"` + StreamName(topic) + `"`
			return func(frame []byte) bool {
				p := string(faultproxy.NATSPayload(frame))
				return p != "" && strings.Contains(p, want) && strings.Contains(p, `"seq":`)
			}
		},
	}
}

// ClientVersion is the version of the nats.go client the kit is built with.
func ClientVersion() string { return "v" + natsgo.Version }

// startPrivate starts a rule's own server: a nats-server child process of
// the embedded version when a binary can be had (it can be killed, for the
// abrupt restart), else an embedded server (graceful restarts only).
func startPrivate(ctx context.Context, client Client) (Server, error) {
	bin, binErr := Binary(ctx)
	if binErr == nil {
		p, err := StartProcess(ctx, bin, Sync{})
		if err == nil {
			return &processServer{p: p, client: client}, nil
		}
		binErr = err
	}
	e, err := StartEmbedded(ctx)
	if err != nil {
		return nil, err
	}
	return &embeddedServer{e: e, client: client, why: binErr}, nil
}

// processServer is a rule's own nats-server child process.
type processServer struct {
	p      *Process
	client Client
}

func (s *processServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.Open(ctx, s.p.URL())
}

func (s *processServer) Restart(ctx context.Context, abrupt bool) error {
	return s.p.Restart(ctx, abrupt)
}

func (s *processServer) Sync(ctx context.Context) (string, bool, error) {
	sy, err := s.p.Sync(ctx)
	if err != nil {
		return "", false, err
	}
	return sy.String() + " (read from the child nats-server's /varz)", sy.CanLoseAcked(), nil
}

func (s *processServer) Stop() error { return s.p.Stop() }

// embeddedServer is a rule's own embedded server.
type embeddedServer struct {
	e      *Embedded
	client Client
	why    error // why no child process could be used
}

func (s *embeddedServer) Open(ctx context.Context) (mq.Broker, error) {
	return s.client.Open(ctx, s.e.URL())
}

func (s *embeddedServer) Restart(ctx context.Context, abrupt bool) error {
	if abrupt {
		return fmt.Errorf("%w: an embedded server lives in the kit's own process and cannot be killed without killing the kit, and no nats-server child process could be started (%v; set %s)",
			mq.ErrUnsupported, s.why, BinaryEnv)
	}
	return s.e.Restart(ctx)
}

func (s *embeddedServer) Sync(context.Context) (string, bool, error) {
	sy := s.e.Sync()
	return sy.String(), sy.CanLoseAcked(), nil
}

func (s *embeddedServer) Stop() error { return s.e.Stop() }

// joinStops runs every stop and joins their errors.
func joinStops(stops ...func() error) func() error {
	return func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
}
