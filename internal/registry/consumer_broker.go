package registry

import (
	"context"
	"fmt"
	coembedded "github.com/onceproof/tck/suites/consumer/embedded"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/consumer"
)

// ConsumerBroker checks a --broker value for the consumer suite: a broker
// target of the registry, not a mutant, in a mode it supports. The CLI
// calls it before anything starts (a usage error, exit 3).
func ConsumerBroker(reg *target.Registry, s string) (target.Ref, error) {
	ref, err := target.Parse(s)
	if err != nil {
		return ref, err
	}
	if ref.Suite != "broker" {
		return ref, fmt.Errorf("--broker %s: want a broker target, broker/NAME[=ADDRESS] (see tck targets --suite broker)", ref)
	}
	k, ref, err := reg.Resolve(ref)
	if err != nil {
		return ref, err
	}
	if k.Mutant {
		return ref, fmt.Errorf("--broker %s: a mutant broker is for the self-test; name a real one", ref)
	}
	return ref, nil
}

// consumerOverBroker binds a consumer design and an outbox to the suite
// over the broker target the run names (tck run --broker): the broker is
// started as its own target would be, and the CO rules that need a
// mechanism it lacks (an ack wait, a nak) are not-applicable with its
// reason (consumer.Target.BrokerCaps).
func consumerOverBroker(ctx context.Context, ref target.Ref, d reference.Design, box co.Outbox) (*target.Started, error) {
	reg := Targets()
	bref, err := ConsumerBroker(reg, ref.Opts.Broker)
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	k, _ := reg.Get(bref.Key())
	bref.Opts = target.Options{Seed: ref.Opts.Seed, TLS: ref.Opts.TLS} // the run's material reaches a TLS broker
	var bst *target.Started
	if bref.Name == "kafka-share" && bref.Mode() == target.Embedded {
		// The kit's kfake with the consumer suite's lock and limit.
		bst, err = kafkaShareBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
			return kafka.RunEmbedded(ctx, kafka.WithShare(consumerShare))
		})(ctx, bref)
	} else {
		bst, err = k.Start(ctx, bref)
	}
	if err != nil {
		return nil, target.Unavailable(ref, fmt.Errorf("its broker: %w", err))
	}
	if bst.Broker == nil {
		_ = bst.Stop()
		return nil, target.Unavailable(ref, fmt.Errorf("the broker target %s opens no handle for the consumer suite", bref))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := bst.Broker(pctx)
	if err != nil {
		_ = bst.Stop()
		return nil, target.Unavailable(ref, fmt.Errorf("its broker %s: %w", bref, err))
	}
	caps := b.Capabilities()
	sl, shared := b.(shareLocked)
	_ = b.Close()
	t := consumer.Target{
		Broker:     bst.Broker,
		BrokerCaps: &caps,
		BrokerName: bref.Key(),
		New:        d.Factory(),
		Declared:   d.Declared(),
		Outbox:     box,
		Seed:       ref.Opts.Seed,
	}
	var shareNotes map[string]string
	if shared {
		t, caps, shareNotes = overShareGroup(t, caps, sl.Share())
	}
	name := bref.String()
	if bref.Address == string(k.Modes[0]) {
		name = bref.Key()
	}
	cfg := consumerConfig(d, box, name+" ("+bst.Info.Version+")")
	if !caps.AckWait {
		cfg["ackWait"] = "none: the broker has no ack wait"
	}
	for k, v := range shareNotes {
		cfg[k] = v
	}
	info := target.Info{
		Name: ref.Key(), Suite: ref.Suite, Mode: bst.Info.Mode, Address: bst.Info.Address,
		Version: bst.Info.Version, Emulator: bst.Info.Emulator, Config: cfg, Notes: bst.Info.Notes,
	}
	return &target.Started{
		Info:     info,
		Rules:    func() target.RuleSet { return spec.Collect(consumer.Register, t, coembedded.NATS()) },
		Register: func() { consumer.Register(t, coembedded.NATS()) },
		Stop:     bst.Stop,
	}, nil
}
