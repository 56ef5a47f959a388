package consumer

import (
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/mq"
)

// brokerCaps are the broker mechanisms the rules provoke redeliveries
// through, as Target.BrokerCaps declares them; without BrokerCaps the
// broker is taken to have NATS JetStream's (ack wait and nak).
func brokerCaps(t Target) []catalog.Capability {
	c, _ := targetCaps(t)
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
	c, name := targetCaps(t)
	if c == nil {
		c = &mq.Capabilities{AckWait: true, NakDelay: true}
	}
	if name == "" {
		name = "the broker"
	}
	if !c.AckWait {
		why[catalog.CapConsumerAckWait] = name + " has no ack wait: an unacknowledged delivery does not come back by itself, so the kit can neither lose an ack and watch the redelivery nor have a second worker take a delivery the first still holds"
		if t.Service != nil && t.Service.Broker.Kind == coservice.BrokerKafka {
			why[catalog.CapConsumerAckWait] = "Kafka has no ack wait and its commits are cumulative: a commit the kit loses is covered by the next and nothing is redelivered until a restart, so the kit can neither lose an ack and watch the redelivery nor have a second replica take a delivery the first still holds"
		}
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

// targetCaps are the broker's mechanisms and name: Target.BrokerCaps, or
// for a consumer service over Kafka, no ack wait (a service re-reads from
// its group's committed offset after a restart, and hands a record back
// by seeking to it: the nak the rules need is the service's own).
func targetCaps(t Target) (*mq.Capabilities, string) {
	if t.Service != nil && t.Service.Broker.Kind == coservice.BrokerKafka {
		return &mq.Capabilities{NakDelay: true}, "Kafka"
	}
	return t.BrokerCaps, t.BrokerName
}
