package consumer

import (
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/mq"
)

// brokerCaps are the broker mechanisms the rules provoke redeliveries
// through, as Target.BrokerCaps declares them; without BrokerCaps the
// broker is taken to have NATS JetStream's (ack wait and nak).
func brokerCaps(t Target) []catalog.Capability {
	c := t.BrokerCaps
	var out []catalog.Capability
	if c == nil || c.AckWait {
		out = append(out, catalog.CapConsumerAckWait)
	}
	if c == nil || c.NakDelay {
		out = append(out, catalog.CapConsumerNak)
	}
	return out
}

// reasons says, for each rule that needs a capability the target lacks
// for a reason of its own (a mechanism the broker lacks; an outbox inside
// a service's black box), why the rule cannot be run.
func reasons(t Target) map[string]string {
	why := map[catalog.Capability]string{}
	if t.Service != nil {
		why[catalog.CapOutbox] = "a consumer service's outbox, if it has one, is inside the black box: the kit has no writer and relay of it to crash between commit and publish"
	}
	c := t.BrokerCaps
	if c == nil {
		c = &mq.Capabilities{AckWait: true, NakDelay: true}
	}
	name := t.BrokerName
	if name == "" {
		name = "the broker"
	}
	if !c.AckWait {
		why[catalog.CapConsumerAckWait] = name + " has no ack wait: an unacknowledged delivery does not come back by itself, so the kit can neither lose an ack and watch the redelivery nor have a second worker take a delivery the first still holds"
	}
	if !c.NakDelay {
		why[catalog.CapConsumerNak] = name + " has no nak: a delivery cannot be handed back for a later redelivery, which the kit does after a failed effect and the reference consumer does while its claim is held by a crashed instance"
	}
	if len(why) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, r := range catalog.All("consumer") {
		for _, n := range r.Needs {
			if w, ok := why[n]; ok {
				out[r.ID] = w
				break
			}
		}
	}
	return out
}
