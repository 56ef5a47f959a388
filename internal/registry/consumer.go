package registry

import (
	"context"
	coembedded "github.com/onceproof/tck/suites/consumer/embedded"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/mutants/comutants"
	"github.com/onceproof/tck/internal/outbox"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/consumer"
)

func consumers() []row {
	ref := reference.Reference()
	rows := []row{{
		Kind: target.Kind{
			Suite: "consumer", Name: "reference",
			Summary: "the reference consumer (atomic claim of (message, version, scope), versioned upsert, ack last) and outbox, over NATS JetStream",
			Needs:   "nothing (embedded NATS); a nats-server with JetStream for a URL",
			Default: true, Reference: true, OverBroker: true,
		},
		modes: []mode{
			{target.Embedded, consumerStarted(ref, outbox.Factory)},
			{target.External, consumerStarted(ref, outbox.Factory)},
		},
	}}
	for _, m := range comutants.All() {
		box := m.Build.Outbox
		if box == nil {
			box = outbox.Factory
		}
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "consumer", Name: "mutant-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail, OverBroker: true,
			},
			modes: []mode{{target.Embedded, consumerStarted(m.Build.Design, box)}},
		})
	}
	return rows
}

// consumerStarted binds a consumer design and an outbox to the suite over
// NATS JetStream: an embedded server, or the server at the ref's URL; or,
// with tck run --broker, over that broker target (consumer_broker.go).
func consumerStarted(d reference.Design, box co.Outbox) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		if ref.Opts.Broker != "" {
			return consumerOverBroker(ctx, ref, d, box)
		}
		url, stop, version := ref.Address, func() error { return nil }, "nats.go "+nats.ClientVersion()
		if ref.Mode() == target.Embedded {
			e, err := nats.StartEmbedded(ctx)
			if err != nil {
				return nil, target.Unavailable(ref, err)
			}
			url, stop, version = e.URL(), e.Stop, "nats-server "+nats.Version+" (embedded)"
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		probe, err := nats.Connect(cctx, url, nats.Options{})
		if err != nil {
			_ = stop()
			return nil, target.Unavailable(ref, redact.Error(err, redact.Secrets(url)...))
		}
		_ = probe.Close()
		t := consumer.Target{
			Broker:   func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, url, nats.Options{}) },
			New:      d.Factory(),
			Declared: d.Declared(),
			Outbox:   box,
			Seed:     ref.Opts.Seed,
		}
		return &target.Started{
			Info: target.Info{
				Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(url), Version: version,
				Config: consumerConfig(d, box, "NATS JetStream"),
			},
			Rules:    func() target.RuleSet { return spec.Collect(consumer.Register, t, coembedded.NATS()) },
			Register: func() { consumer.Register(t, coembedded.NATS()) },
			Stop:     stop,
		}, nil
	}
}

// consumerConfig is what a consumer target declares, for the report.
func consumerConfig(d reference.Design, box co.Outbox, broker string) map[string]string {
	life := "forever"
	if d.Lifetime > 0 {
		life = d.Lifetime.String()
	}
	return map[string]string{
		"broker":               broker,
		"scopes":               strings.Join(d.Declared().Scopes, ", "),
		"dedupeRecordLifetime": life,
		"clockScale":           "x1200 (a seed minute is 50ms real)",
		"ackWait":              "2m seed (100ms real)",
		"redeliveryHorizon":    "11m seed (550ms real)",
		"schedule":             "200 events, seed in the CO-5.1 evidence",
		"outbox":               boolString(box != nil),
	}
}
