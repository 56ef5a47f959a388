package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/options"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/mq"
)

// This file is the broker/kafka target as the kit starts it: an embedded
// kfake cluster, or a cluster at a bootstrap address (container.go: or in a
// container); the client the kit
// reaches it with; and what the kit may do to it. The registry binds a
// Target to the broker suite; nothing here knows the CLI.

// ImageEnv names the variable holding a Kafka image for =container: no
// Kafka server can be built here, so the kit starts one only from a local
// image the user names (StandInImage is the kit's kfake stand-in).
const ImageEnv = "TCK_KAFKA_IMAGE"

// ErrNoImage is the error of =container without ImageEnv.
var ErrNoImage = errors.New("no Kafka image: set " + ImageEnv + " to a local Kafka image (the kit builds none but its kfake stand-in, an emulator: scripts/build-images.sh kfake, " + StandInImage + "), or give a bootstrap address (broker/kafka=kafka://host:port)")

// Client is how the kit's handles talk to a cluster: the adapter's options
// and, for a mutant, the defect wrapped around every handle.
type Client struct {
	Options Options
	Wrap    func(mq.Broker) mq.Broker
	// Declare adjusts what the target declares (a mutant that claims what
	// it does not have).
	Declare func(mq.Capabilities) mq.Capabilities
}

// Open opens a handle.
func (c Client) Open(ctx context.Context) (mq.Broker, error) {
	b, err := Connect(ctx, c.Options)
	if err != nil {
		return nil, err
	}
	var h mq.Broker = b
	if c.Options.Share != nil {
		h = &ShareBroker{k: b, share: *c.Options.Share, settled: map[string]bool{}, earliest: map[string]bool{}, members: map[*shareConsumer]bool{}}
	}
	if c.Wrap == nil {
		return h, nil
	}
	return c.Wrap(h), nil
}

// Target is a Kafka cluster the kit checks, opened by Open or started by
// Run or RunEmbedded.
type Target struct {
	mq.Info
	Client Client
	// Embedded, when set, is the kit's own kfake cluster: its request
	// controls lose a produce reply at the broker (BR-5.1).
	Embedded *Embedded
	// Private, when set, starts a cluster of a rule's own that the rule
	// may restart (BR-3.1).
	Private func(ctx context.Context) (Server, error)
	// Stop releases everything the start created.
	Stop func() error
}

// Option says how Open, Run and RunEmbedded reach the cluster.
type Option func(*settings)

type settings struct {
	client Client
	share  *Share
}

// WithClient sets how the kit's handles talk to the cluster: the adapter's
// options and, for a mutant, the defect wrapped around every handle.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithTLS sets the client's TLS configuration (docs/tls.md), after any
// WithClient.
func WithTLS(cfg *tls.Config) Option { return func(s *settings) { s.client.Options.TLS = cfg } }

// WithShare reaches the cluster through share groups (KIP-932) with these
// group settings: declared for Open (a zero field is Kafka's default),
// set on the kit's kfake for RunEmbedded.
func WithShare(sh Share) Option { return func(s *settings) { s.share = &sh } }

// RunEmbedded starts a kfake cluster in this process; WithShare starts it
// with share groups (share.go).
func RunEmbedded(ctx context.Context, opts ...Option) (*Target, error) {
	st := options.Apply(opts)
	if st.share != nil {
		return embeddedShare(ctx, st.client, *st.share)
	}
	client := st.client
	e, err := StartEmbedded(ctx)
	if err != nil {
		return nil, err
	}
	client.Options.Seeds = e.Seeds()
	t, err := newTarget(ctx, client, e.Stop)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	t.Embedded = e
	t.Emulator = true
	own := t.Client
	t.Private = func(ctx context.Context) (Server, error) {
		return StartPrivate(ctx, own, !own.Options.Defects.NoPersistence)
	}
	t.Config["restartable"] = "a rule's own kfake with a data directory, gracefully"
	t.Address = "kfake " + strings.Join(e.Seeds(), ",")
	t.Version = KfakeVersion + ", franz-go " + FranzVersion // the report adds "(emulator)"
	t.Notes = append(t.Notes, "emulator: franz-go's kfake, not a Kafka deployment; a pass certifies the client-side contract and the kit's rules, not a Kafka server's configuration")
	t.Config["faults"] = "kfake request controls (a produce appended, then answered REQUEST_TIMED_OUT)"
	return t, nil
}

// FranzVersion is the franz-go (kgo) the kit is built with (go.mod).
const FranzVersion = "v1.22.3"

// ParseURL reads kafka://[user:password@]host:port[?bootstrap=host:port,...][&mechanism=SCRAM-SHA-256]
// into options. One bootstrap broker is enough (the client learns the
// others from metadata); bootstrap= names more.
func ParseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "kafka" || u.Host == "" {
		return Options{}, fmt.Errorf("address %q: want kafka://[user:password@]host:port[?bootstrap=host:port,...]", redact.Text(raw))
	}
	var o Options
	for _, h := range append([]string{u.Host}, strings.Split(u.Query().Get("bootstrap"), ",")...) {
		if h = strings.TrimSpace(h); h != "" {
			if !strings.Contains(h, ":") {
				h += ":9092"
			}
			o.Seeds = append(o.Seeds, h)
		}
	}
	if u.User != nil {
		o.User = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	o.Mechanism = u.Query().Get("mechanism")
	switch u.Query().Get("tls") {
	case "", "false":
	case "true":
		// TLS with the system's roots; --tls-ca replaces this config.
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return Options{}, fmt.Errorf("address %q: tls= is true or false", redact.Text(raw))
	}
	return o, nil
}

// Open binds the kit to the cluster at raw (see ParseURL). It checks a
// broker answers and that the kit may create and delete a topic of its own;
// errors carry no credential. WithShare reaches it through share groups.
func Open(ctx context.Context, raw string, opts ...Option) (*Target, error) {
	st := options.Apply(opts)
	if st.share != nil {
		return openShare(ctx, raw, st.client, *st.share)
	}
	return open(ctx, raw, st.client)
}

func open(ctx context.Context, raw string, client Client) (*Target, error) {
	o, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	o.Defects, o.Prefix, o.Run, o.Share = client.Options.Defects, client.Options.Prefix, client.Options.Run, client.Options.Share
	if client.Options.TLS != nil {
		o.TLS = client.Options.TLS // the run's material
	}
	client.Options = o
	t, err := newTarget(ctx, client, nil)
	if err != nil {
		return nil, redact.Error(err, redact.Secrets(raw)...)
	}
	u, _ := url.Parse(raw)
	t.URL = raw
	u.User = nil
	t.Address = u.String()
	t.Version = "franz-go " + FranzVersion
	if o.User != "" {
		t.Config["sasl"] = strings.ToUpper(o.withDefaults().Mechanism) + " as " + o.User
	}
	if o.TLS != nil {
		t.Config["tls"] = "required"
	}
	return t, nil
}

// probeTimeout bounds the start-up checks.
const probeTimeout = 10 * time.Second

// newTarget connects, creates and deletes a probe topic, and reads what the
// cluster is.
func newTarget(ctx context.Context, client Client, stop func() error) (*Target, error) {
	if client.Options.Run == "" {
		client.Options.Run = NewRun()
	}
	if client.Options.Timeout <= 0 {
		client.Options.Timeout = probeTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	b, err := Connect(cctx, client.Options)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if err := b.CreateTopic(cctx, "probe", mq.TopicConfig{Retention: mq.Limits}); err != nil {
		return nil, fmt.Errorf("the kit may not create its topics (%s*): %w", b.TopicName(""), err)
	}
	if err := b.DeleteTopic(cctx, "probe"); err != nil {
		return nil, fmt.Errorf("the kit may not delete its own topics (%s*): %w", b.TopicName(""), err)
	}
	caps := Caps()
	if client.Declare != nil {
		caps = client.Declare(caps)
	}
	if stop == nil {
		stop = func() error { return nil }
	}
	cfg := map[string]string{
		"topics":      b.TopicName("") + "<name>, 1 partition, deleted after each rule with the kit's groups (" + b.GroupName("") + "<group>)",
		"producer":    "idempotent (acks=all), one producer session per handle",
		"consumer":    "consumer group member, auto-commit off, ack = commit of offset+1 confirmed by the commit response",
		"crash":       "a member leaves the group without committing",
		"attempts":    "counted by the kit's handle (Kafka keeps no delivery counter)",
		"redelivery":  "by a rebalance (a member left) or a reset of the group's offset; no ack wait, nak, term or max-deliver",
		"dedupe":      "none by message id; the idempotent producer drops retries inside one producer session",
		"kgo.version": FranzVersion,
	}
	if client.Options.Defects.NoIdempotence {
		cfg["producer"] = "not idempotent (acks=all)"
	}
	if v, err := version(cctx, b); err == nil && v != "" {
		cfg["cluster"] = v
	}
	return &Target{Info: mq.Info{URL: "kafka://" + strings.Join(client.Options.Seeds, ","), Caps: caps, Config: cfg}, Client: client, Stop: stop}, nil
}

// version names the cluster's brokers as metadata reports them.
func version(ctx context.Context, b *Broker) (string, error) {
	md, err := b.adm.BrokerMetadata(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d broker(s), cluster id %s", len(md.Brokers), md.Cluster), nil
}
