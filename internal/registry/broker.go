package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/mutants/natsmutants"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

const natsNeeds = "Docker and the image " + nats.DefaultImage + " (" + nats.ImageEnv + "; `make images` builds it)"

func brokers() []row {
	rows := []row{
		{
			Kind: target.Kind{
				Suite: "broker", Name: "nats",
				Summary: "NATS JetStream through nats.go/jetstream: an embedded nats-server, or a server at nats://[user:password@]host:port or tls://host:port (?creds=FILE, ?nkey=FILE, --tls-ca; docs/tls.md)",
				Needs:   "nothing (embedded); a nats-server with JetStream for a URL; " + natsNeeds + " for =container",
				Default: true, Reference: true,
			},
			modes: []mode{
				{target.Embedded, natsBroker(embedded(nats.Client{}))},
				{target.External, natsBroker(func(ctx context.Context, ref target.Ref) (*nats.Target, error) {
					cfg, err := ref.Opts.TLS.Config()
					if err != nil {
						return nil, err
					}
					return nats.Open(ctx, ref.Address, nats.WithTLS(cfg))
				})},
				{target.Container, natsBroker(func(ctx context.Context, _ target.Ref) (*nats.Target, error) {
					return nats.Run(ctx, "")
				})},
			},
		},
		{
			Kind: target.Kind{
				Suite: "broker", Name: "nats-cluster",
				Summary: "a three-node NATS JetStream cluster in containers, streams with three replicas; the stream leader is killed and restarted during BR-2.9",
				Needs:   natsNeeds,
			},
			modes: []mode{
				{target.Container, natsBroker(func(ctx context.Context, _ target.Ref) (*nats.Target, error) {
					return nats.RunCluster(ctx, "")
				})},
			},
		},
	}
	// Every broken broker client, each in front of a real embedded NATS.
	for _, m := range natsmutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, natsBroker(embedded(m.Build))}},
			note:  "mutant: " + m.Defect,
		})
	}
	return rows
}

func embedded(c nats.Client) func(ctx context.Context, ref target.Ref) (*nats.Target, error) {
	return func(ctx context.Context, _ target.Ref) (*nats.Target, error) {
		return nats.RunEmbedded(ctx, nats.WithClient(c))
	}
}

// natsBroker binds a NATS target, however started, to the broker suite.
func natsBroker(startNATS func(ctx context.Context, ref target.Ref) (*nats.Target, error)) start {
	return brokerStart(func(ctx context.Context, ref target.Ref) (*boundBroker, error) {
		nt, err := startNATS(ctx, ref)
		if err != nil {
			return nil, err
		}
		return &boundBroker{info: &nt.Info, stop: nt.Stop, binding: BrokerTarget(nt), config: brokerConfig(nt),
			// The run's profile, --max-wait and progress (broker_profile.go).
			profile: func(ctx context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error {
				return bindProfile(ctx, nt, ref, t, info)
			}}, nil
	})
}

// boundBroker is a broker adapter's target, however started, bound to the
// broker suite: what every adapter gives the one start below.
type boundBroker struct {
	info    *mq.Info
	stop    func() error
	binding BrokerBinding
	config  map[string]string // what the report shows, in real units
	local   bool              // a server of the kit's own started from PATH
	// profile binds the run's profile; nil: the adapter has none.
	profile func(ctx context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error
}

// brokerStart is the one way a broker target starts for a run: the
// adapter's start, the run's settings, the report's view and the profile.
// A failure to start is target.Unavailable (exit 4).
func brokerStart(open func(ctx context.Context, ref target.Ref) (*boundBroker, error)) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		b, err := open(ctx, ref)
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		t := b.binding
		// The run's settings: the seed of the randomized rules, and BR-1.7's
		// window (0: the rule chooses it from a restart it measures).
		t.Seed = ref.Opts.Seed
		t.Windows.RestartWindow = ref.Opts.RestartWindow
		m := ref.Mode()
		if b.local {
			m = target.Embedded // a server of the kit's own, started from PATH
		}
		info := target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: m, Address: target.Redact(b.info.Name()),
			Version: b.info.Version, Emulator: b.info.Emulator, Config: b.config, Server: b.info.Server, Notes: b.info.Notes,
		}
		if b.profile != nil {
			if err := b.profile(ctx, ref, &t, &info); err != nil {
				_ = b.stop()
				return nil, err
			}
		}
		return &target.Started{
			Info:     info,
			Rules:    func() target.RuleSet { return spec.Collect(broker.Register, t.Target, t.Hooks()) },
			Register: func() { broker.Register(t.Target, t.Hooks()) },
			Broker:   t.Open,
			Stop:     b.stop,
		}, nil
	}
}

// BrokerBinding is a broker target bound to the broker suite: the
// author's fields (broker.Target) and the kit's hooks (kithooks.Broker),
// which reach the rules as the option Hooks. The registry's Rules and
// Register pass the same hooks, so the engine and the Ginkgo driver give
// the same verdicts; a test runs it as broker.Check(t, b.Target, b.Hooks()).
type BrokerBinding struct {
	broker.Target
	kithooks.Broker
}

// Hooks is the kit's hooks as an option of broker.Check and broker.Register.
func (b BrokerBinding) Hooks() spec.Option { return spec.With(b.Broker) }

// BrokerTarget is the broker suite's view of a NATS target, however it was
// started; tests that start a target themselves bind it with this too.
func BrokerTarget(nt *nats.Target) BrokerBinding {
	client, url := nt.Client, nt.URL
	t := BrokerBinding{
		Target: broker.Target{
			Open:   func(ctx context.Context) (mq.Broker, error) { return client.Open(ctx, url) },
			Caps:   nt.Caps,
			Budget: nt.Budget,
		},
		// Read past the client under test (a mutant's wrap): the server's
		// own settings.
		Broker: kithooks.Broker{Inspect: func(ctx context.Context) (mq.Inspector, error) { return nats.Inspect(ctx, url, client.Options) }},
	}
	if p := nt.Proxy; p != nil {
		t.Fault = &kithooks.Fault{
			Addr: p.Addr, OpenVia: p.OpenVia, Split: p.Split,
			PublishReply: p.PublishReply,
		}
	}
	t.Private = privateOf(nt.Private)
	if disrupt := nt.Disrupt; disrupt != nil {
		// A violation the fault's probe saw fails the rule; a probe that
		// could not run leaves it unknown.
		t.Disrupt = func(ctx context.Context, rule, topic string, log verdict.Log) error {
			err := disrupt(ctx, rule, topic, log)
			if errors.Is(err, nats.ErrProbe) {
				return fmt.Errorf("%w: %w", kithooks.ErrViolation, err)
			}
			return err
		}
	}
	if len(nt.Only) > 0 {
		t.NotApplicable = map[string]string{}
		for _, r := range catalog.All("broker") {
			if !slices.Contains(nt.Only, r.ID) {
				t.NotApplicable[r.ID] = nt.OnlyWhy
			}
		}
	}
	return t
}

// BrokerServer is a NATS server of a rule's own as the broker suite
// restarts it.
func BrokerServer(s nats.Server) kithooks.Server { return restartable{s} }

// adapterServer is a broker server of a rule's own as every broker adapter
// offers it (NATS, Redis, Kafka): restarted gracefully or abruptly by a
// flag.
type adapterServer interface {
	Open(ctx context.Context) (mq.Broker, error)
	Restart(ctx context.Context, abrupt bool) error
	Sync(ctx context.Context) (setting string, canLoseAcked bool, err error)
	Stop() error
}

// restartable is an adapter's server as the broker suite restarts it.
type restartable struct{ adapterServer }

func (s restartable) Restart(ctx context.Context, how kithooks.Restart) error {
	return s.adapterServer.Restart(ctx, how == kithooks.Abrupt)
}

// privateOf binds an adapter's start of a rule's own server to the broker
// suite's hook Private: the one binding for every broker (nil: the
// target has none).
func privateOf[S adapterServer](start func(context.Context) (S, error)) func(context.Context) (kithooks.Server, error) {
	if start == nil {
		return nil
	}
	return func(ctx context.Context) (kithooks.Server, error) {
		s, err := start(ctx)
		if err != nil {
			return nil, err
		}
		return restartable{s}, nil
	}
}

// brokerConfig is what the target declares, in real units, for the report.
func brokerConfig(nt *nats.Target) map[string]string {
	c, w := nt.Caps, kithooks.DefaultWindows()
	var rs, rr []string
	for _, r := range c.Retentions {
		rs = append(rs, string(r))
	}
	for _, r := range c.DedupeAfterRestart {
		rr = append(rr, string(r))
	}
	cfg := map[string]string{
		"dedupeWindow":       c.DedupeWindow.String(),
		"dedupeRefreshOnHit": boolString(c.DedupeRefreshOnHit),
		"dedupeAfterRestart": strings.Join(rr, ", "),
		"ackWait":            w.AckWait.String(),
		"nakDelay":           w.NakDelay.String(),
		"maxDeliver":         fmt.Sprint(w.MaxDeliver),
		"tolerance":          w.Tolerance.String(),
		"totalQueueMessages": fmt.Sprint(w.Messages),
		"retentions":         strings.Join(rs, ", "),
	}
	maps.Copy(cfg, nt.Config)
	return cfg
}
