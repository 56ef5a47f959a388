package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/mq"
)

// mechanisms are the capabilities a broker has when its handle implements
// an optional interface of package mq: found by type assertion, never
// declared, so a flag cannot promise what the adapter does not do.
var mechanisms = []struct {
	cap   catalog.Capability
	iface string
	has   func(mq.Broker) bool
}{
	{catalog.CapBrokerPendingList, "mq.PendingInspector", implements[mq.PendingInspector]},
	{catalog.CapBrokerTrim, "mq.Trimmer", implements[mq.Trimmer]},
	{catalog.CapBrokerProducerSessions, "mq.SessionBroker", implements[mq.SessionBroker]},
	{catalog.CapBrokerGroupOffsets, "mq.GroupOffsets", implements[mq.GroupOffsets]},
	{catalog.CapBrokerMandatory, "mq.UnroutablePublisher", implements[mq.UnroutablePublisher]},
	{catalog.CapBrokerPublishNack, "mq.BoundedTopics", implements[mq.BoundedTopics]},
	{catalog.CapBrokerDeadLetter, "mq.DeadLetterReader", implements[mq.DeadLetterReader]},
}

func implements[I any](b mq.Broker) bool { _, ok := b.(I); return ok }

// probeWait bounds the probe's open: a broker that does not answer leaves
// every mechanism assumed, and each rule's own open says why it failed.
const probeWait = 30 * time.Second

// probe opens one handle and reports the mechanisms its adapter implements;
// for one it does not, the reason names the interface unless the target
// gave its own (Lacks, in the broker's terms).
func (p *plan) probe(ctx context.Context) []catalog.Capability {
	ctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	all := make([]catalog.Capability, 0, len(mechanisms))
	for _, m := range mechanisms {
		all = append(all, m.cap)
	}
	if p.t.Open == nil {
		return all
	}
	b, err := p.t.Open(ctx)
	if err != nil {
		return all
	}
	defer b.Close()
	var have []catalog.Capability
	for _, m := range mechanisms {
		if m.has(b) {
			have = append(have, m.cap)
			continue
		}
		if _, ok := p.set.Lacks[m.cap]; !ok {
			p.set.Lacks[m.cap] = fmt.Sprintf("the broker's handle (%T) does not implement %s", b, m.iface)
		}
	}
	return have
}
