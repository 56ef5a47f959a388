package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KfakeVersion is the kfake the kit is built with (go.mod).
const KfakeVersion = "kfake v0.0.0-20260918054303-01f206a7e32c"

// Embedded is an in-process kfake cluster: franz-go's Kafka emulator. A
// pass on it certifies the client-side contract and the kit's rules, not a
// Kafka deployment.
type Embedded struct {
	c    *kfake.Cluster
	once sync.Once
}

// EmbeddedOption tunes StartEmbedded.
type EmbeddedOption = kfake.Opt

// StartEmbedded starts a one-broker kfake cluster on a loopback port. kfake
// starts at once; ctx ended means nothing is started.
func StartEmbedded(ctx context.Context, opts ...EmbeddedOption) (*Embedded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1), // kfake listens on 127.0.0.1 only
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("starting kfake: %w", err)
	}
	return &Embedded{c: c}, nil
}

// Seeds are the cluster's bootstrap addresses.
func (e *Embedded) Seeds() []string { return e.c.ListenAddrs() }

// Cluster is the kfake cluster, for the kit's faults.
func (e *Embedded) Cluster() *kfake.Cluster { return e.c }

// Stop closes the cluster.
func (e *Embedded) Stop() error {
	e.once.Do(e.c.Close)
	return nil
}

// ProduceAttempt is one produce request the cluster received for a topic:
// the producer session it came from and the batch's first sequence number.
type ProduceAttempt struct {
	ProducerID    int64
	ProducerEpoch int16
	Sequence      int32
	Records       int32
}

func (a ProduceAttempt) String() string {
	if a.ProducerID < 0 {
		return fmt.Sprintf("no producer id (not idempotent), %d record(s)", a.Records)
	}
	return fmt.Sprintf("producer id %d epoch %d sequence %d, %d record(s)", a.ProducerID, a.ProducerEpoch, a.Sequence, a.Records)
}

// LostReply is an armed fault: the next produce to one topic is appended
// and then answered REQUEST_TIMED_OUT in place of its success, so the
// client sees no acknowledgement and retries (kfake's after-apply fault,
// "the record is in the log, and what the client does with the retry is up
// to the client"). A request control observes every produce to the topic
// and keeps what it saw.
type LostReply struct {
	e      *Embedded
	topic  string
	id     [16]byte
	fault  *kfake.FaultHandle
	mu     sync.Mutex
	seen   []ProduceAttempt
	active bool
}

// LoseNextProduceReply arms a LostReply for the Kafka topic kt.
func (e *Embedded) LoseNextProduceReply(kt string) *LostReply {
	l := &LostReply{e: e, topic: kt, active: true}
	// Produce v13 names a topic by its id only.
	if ti := e.c.TopicInfo(kt); ti != nil {
		l.id = ti.TopicID
	}
	e.c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		l.observe(req.(*kmsg.ProduceRequest))
		return nil, nil, false // observed only: the cluster (and its faults) answers
	})
	l.fault = e.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: kt, Err: kerr.RequestTimedOut, Count: 1})
	return l
}

func (l *LostReply) observe(req *kmsg.ProduceRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		return
	}
	for _, t := range req.Topics {
		if t.Topic != l.topic && (t.TopicID != l.id || l.id == [16]byte{}) {
			continue
		}
		for _, p := range t.Partitions {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(p.Records); err != nil {
				continue
			}
			l.seen = append(l.seen, ProduceAttempt{ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch, Sequence: b.FirstSequence, Records: b.NumRecords})
		}
	}
}

// Fired says whether the fault answered a produce.
func (l *LostReply) Fired() bool { return l.fault.Hits() > 0 }

// Seen is every produce request to the topic since the fault was armed.
func (l *LostReply) Seen() []ProduceAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ProduceAttempt(nil), l.seen...)
}

// Remove disarms the fault and stops observing.
func (l *LostReply) Remove() {
	l.fault.Remove()
	l.mu.Lock()
	l.active = false
	l.mu.Unlock()
}

// StartEmbeddedShare starts a kfake cluster whose share groups run with s
// (the lock, the delivery limit), for a consumer service over a share
// group.
func StartEmbeddedShare(ctx context.Context, s Share) (*Embedded, error) {
	return StartEmbedded(ctx, kfake.BrokerConfigs(shareBrokerConfigs(s, false)))
}
