package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/mutants/rabbitmutants"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// RabbitMQURLEnv names the variable holding the RabbitMQ the RabbitMQ
// targets use when none is named; unset, they start a rabbitmq-server of
// the kit's own from PATH.
const RabbitMQURLEnv = "TCK_RABBITMQ_URL"

const rabbitNeeds = "a RabbitMQ 3.9 or later (streams, quorum queues) at " + RabbitMQURLEnv + " or amqp://user:password@host:port/vhost (amqps:// with --tls-ca: docs/tls.md)"

func rabbitBrokers() []row {
	needs := rabbitNeeds
	if os.Getenv(RabbitMQURLEnv) == "" {
		needs += "; " + RabbitMQURLEnv + " is unset here, so a run without an address starts a " + rabbitmq.ServerBinary + " from PATH (Debian: apt-get install rabbitmq-server)"
		if !rabbitmq.HaveServerBinary() {
			needs += " (not installed here: such a run is unavailable, exit 4)"
		}
	}
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "rabbitmq",
			Summary:    "RabbitMQ through amqp091-go: confirmed mandatory publishes, a stream as the topic's log, quorum queues with basic.ack, basic.nack requeue, basic.reject, x-delivery-limit to a dead-letter exchange, consumer_timeout as the ack wait (on the kit's own server); no producer de-dupe, nak delay or in-progress",
			Needs:      needs + "; Docker and the image " + rabbitmq.DefaultImage + " (" + rabbitmq.ImageEnv + "; `make images` builds it) for =container",
			AddressEnv: RabbitMQURLEnv,
			// The self-test holds the adapter to passing every rule that
			// applies, as its mutants are measured against it.
			Reference: true,
		},
		modes: []mode{
			{target.External, rabbitBroker(rabbitAt(rabbitmq.Client{}), nil)},
			// consumer_timeout at the rules' ack wait, as on the kit's own server
			{target.Container, rabbitBroker(func(ctx context.Context, _ target.Ref) (*rabbitmq.Target, error) {
				return rabbitmq.Run(ctx, "", rabbitmq.WithAckWait(kithooks.DefaultWindows().AckWait))
			}, nil)},
		},
	}}
	// Every broken RabbitMQ client, each in front of a real server, run on
	// the rules its defect targets.
	for _, m := range rabbitmutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-rabbitmq-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   needs,
				Mutant:  true, MustFail: m.MustFail, AddressEnv: RabbitMQURLEnv,
			},
			modes: []mode{{target.External, rabbitBroker(rabbitAt(m.Build), m.MustFail)}},
			note:  "mutant: " + m.Defect,
		})
	}
	return rows
}

// rabbitAt reaches the server at the ref's URL or, with no address
// (TCK_RABBITMQ_URL unset), starts a rabbitmq-server of the kit's own with
// consumer_timeout at the rules' ack wait.
func rabbitAt(client rabbitmq.Client) func(ctx context.Context, ref target.Ref) (*rabbitmq.Target, error) {
	return func(ctx context.Context, ref target.Ref) (*rabbitmq.Target, error) {
		if ref.Address == "" {
			return rabbitmq.RunLocal(ctx, rabbitmq.WithClient(client), rabbitmq.WithAckWait(kithooks.DefaultWindows().AckWait))
		}
		// The run's material, for an amqps:// address (docs/tls.md).
		cfg, err := ref.Opts.TLS.Config()
		if err != nil {
			return nil, err
		}
		addr, mgmt := rabbitmq.SplitManagement(ref.Address)
		return rabbitmq.Open(ctx, addr, rabbitmq.WithClient(client), rabbitmq.WithTLS(cfg), rabbitmq.WithManagement(mgmt))
	}
}

// rabbitBroker binds a RabbitMQ target to the broker suite; only, when
// set, are the rules a mutant runs (the rest are not-applicable, saying
// so).
func rabbitBroker(startRabbit func(ctx context.Context, ref target.Ref) (*rabbitmq.Target, error), only []string) start {
	return brokerStart(func(ctx context.Context, ref target.Ref) (*boundBroker, error) {
		rt, err := startRabbit(ctx, ref)
		if errors.Is(err, rabbitmq.ErrNoServerBinary) {
			return nil, fmt.Errorf("no RabbitMQ server: %s is unset and %w; set %s=amqp://user:password@host:port/vhost, or name one (%s=amqp://...)", RabbitMQURLEnv, err, RabbitMQURLEnv, ref.Key())
		}
		if err != nil {
			return nil, err
		}
		t := RabbitBrokerTarget(rt)
		if len(only) > 0 {
			t.NotApplicable = map[string]string{}
			for _, r := range catalog.All("broker") {
				if !slices.Contains(only, r.ID) {
					t.NotApplicable[r.ID] = "a RabbitMQ mutant runs only the rules its defect targets (" + fmt.Sprint(only) + "); broker/rabbitmq runs every rule"
				}
			}
		}
		return &boundBroker{info: &rt.Info, stop: rt.Stop, binding: t, config: rabbitConfig(rt, t), local: ref.Address == "",
			// The run's profile, or the scratch copy (rabbitmq_profile.go).
			profile: func(_ context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error {
				return bindRabbitProfile(rt, ref, t, info)
			}}, nil
	})
}

// RabbitBrokerTarget is the broker suite's view of a RabbitMQ target; tests
// that start one themselves bind it with this too. The rules' ack wait is
// the node's consumer_timeout where the kit set it. A rule that needs a
// capability RabbitMQ lacks is not-applicable with RabbitMQ's own reason.
func RabbitBrokerTarget(rt *rabbitmq.Target) BrokerBinding {
	client, url := rt.Client, rt.URL
	t := BrokerBinding{Target: broker.Target{
		Open: func(ctx context.Context) (mq.Broker, error) { return client.Open(ctx, url) },
		Caps: rt.Caps,
	}}
	if rt.ConsumerTimeout > 0 {
		t.Windows.AckWait = rt.ConsumerTimeout
	}
	t.Private = privateOf(rt.Private)
	t.Lacks = rt.Lacks
	if rt.Private != nil && rt.Management != "" {
		// The kit's own server: BR-6.1 checks a scratch copy of the client
		// under test through the management API (rabbitmq_profile.go).
		t.Inspect = rabbitInspect(rt)
		t.Lacks = withoutInspect(rt.Lacks)
	}
	return t
}

// rabbitConfig is what the target declares, for the report.
func rabbitConfig(rt *rabbitmq.Target, t BrokerBinding) map[string]string {
	w := kithooks.DefaultWindows()
	cfg := map[string]string{
		"maxDeliver":         fmt.Sprint(w.MaxDeliver),
		"tolerance":          w.Tolerance.String(),
		"totalQueueMessages": fmt.Sprint(w.Messages),
	}
	if t.Windows.AckWait > 0 {
		cfg["ackWait"] = t.Windows.AckWait.String() + " (the node's consumer_timeout)"
	}
	for k, v := range rt.Config {
		cfg[k] = v
	}
	return cfg
}
