package main

import (
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/target"
)

// overBrokers applies --broker: each consumer target that can read from any
// broker runs once per broker named, under the name "TARGET over BROKER", so
// the report shows the CO verdicts per broker. A --broker that names no
// broker target, or a run without such a consumer target, is a usage error.
func overBrokers(reg *target.Registry, p plan, brokers []string) (plan, error) {
	if len(brokers) == 0 {
		return p, nil
	}
	var refs []target.Ref
	for _, b := range brokers {
		ref, err := registry.ConsumerBroker(reg, b)
		if err != nil {
			return p, usagef("%v", err)
		}
		refs = append(refs, ref)
	}
	var out []planned
	n := 0
	for _, t := range p.targets {
		if t.kind.Suite != "consumer" {
			out = append(out, t)
			continue
		}
		if !t.kind.OverBroker {
			return p, usagef("--broker: target %s reads from a broker of its own; the consumer targets that take --broker are consumer/reference, consumer/process and their mutants", t.name)
		}
		if registry.IsService(t.kind) {
			for _, b := range refs {
				if err := registry.ServiceBrokerRefSupported(t.kind, b); err != nil {
					return p, usagef("%v", err)
				}
			}
		}
		for _, b := range refs {
			c := t
			c.ref.Opts.Broker = b.Key() + "=" + b.Address // unredacted: the consumer target connects with it
			if b.Address == "" {
				// A broker reached by its address variable, unset (a server
				// of the kit's own from PATH): the bare key.
				c.ref.Opts.Broker = b.Key()
			}
			label := b.String()
			if k, ok := reg.Get(b.Key()); ok && b.Address == string(k.Modes[0]) {
				label = b.Key()
			}
			c.name = t.name + " over " + label
			out = append(out, c)
			n++
		}
	}
	if n == 0 {
		return p, usagef("--broker is for the consumer suite: add --suite consumer (or a consumer --target)")
	}
	p.targets = out
	return p, nil
}
