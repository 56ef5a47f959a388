package cochannel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/onceproof/tck/internal/coservice"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/mq"
)

// OpenKafka creates, on the cluster at seeds, the rule's topic (one
// partition, under broker/kafka's topic prefix so `tck clean` sees it is
// the kit's) whose offsets the service commits under the group
// DurableName. Kafka has no ack wait, nak or max deliver: a service
// re-reads from its group's committed offset after a restart. A record at
// offset o is sequence o+1 (Event.Seq); a commit of offset c acks every
// sequence up to c.
func OpenKafka(ctx context.Context, seeds []string, name string) (coservice.Channel, error) {
	c, err := openKafka(ctx, seeds, name)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func openKafka(ctx context.Context, seeds []string, name string) (*kafkaChannel, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("onceproof-tck-consumer-process"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), // a service's client needs no codec
		kgo.ProducerLinger(0), kgo.RecordRetries(1))
	if err != nil {
		return nil, fmt.Errorf("the Kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	safe := strings.NewReplacer(" ", "_", "*", "_", "/", "_", ":", "_").Replace(name)
	var nb [4]byte
	_, _ = rand.Read(nb[:])
	c := &kafkaChannel{cl: cl, adm: adm, topic: kafka.DefaultPrefix + ".co-" + hex.EncodeToString(nb[:]) + "." + safe}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, 1, -1, nil, c.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("creating topic %s: %w", c.topic, err)
	}
	c.topicID = resp.ID
	return c, nil
}

// kafkaChannel is one rule's topic, group and proxies (a set of
// listeners per worker, one per broker node).
type kafkaChannel struct {
	cl      *kgo.Client
	adm     *kadm.Client
	topic   string
	topicID [16]byte
	proxies
	share *shareState // a share group's (OpenKafkaShare), or nil

	mu        sync.Mutex
	committed int64                  // the highest offset the proxies forwarded a commit of
	nodes     map[string]*kafkaNodes // worker -> its listeners
}

// kafkaNodes is a worker's listeners: broker address -> relay.
type kafkaNodes struct {
	mu     sync.Mutex
	relays map[string]*relay
}

func (c *kafkaChannel) Env(worker string) (map[string]string, error) {
	seeds := c.cl.OptValue(kgo.SeedBrokers).([]string)
	if len(seeds) == 0 {
		return nil, errors.New("no seed broker")
	}
	seed := seeds[0]
	if !strings.Contains(seed, ":") {
		seed += ":9092"
	}
	addr, err := c.addr(worker, func(hook func() coservice.Hook, nextID func() int) (*relay, error) {
		return c.nodeRelay(worker, seed, hook, nextID)
	})
	if err != nil {
		return nil, fmt.Errorf("starting the proxy for %s: %w", worker, err)
	}
	if c.share != nil {
		return map[string]string{
			coservice.EnvBroker:       coservice.BrokerKafkaShare,
			coservice.EnvKafkaBrokers: addr,
			coservice.EnvTopic:        c.topic,
			coservice.EnvGroup:        c.share.group,
		}, nil
	}
	return map[string]string{
		coservice.EnvBroker:       coservice.BrokerKafka,
		coservice.EnvKafkaBrokers: addr,
		coservice.EnvTopic:        c.topic,
		coservice.EnvGroup:        coservice.DurableName,
	}, nil
}

// nodeRelay is worker's listener for the broker at target, started on
// first use.
func (c *kafkaChannel) nodeRelay(worker, target string, hook func() coservice.Hook, nextID func() int) (*relay, error) {
	c.mu.Lock()
	if c.nodes == nil {
		c.nodes = map[string]*kafkaNodes{}
	}
	n := c.nodes[worker]
	if n == nil {
		n = &kafkaNodes{relays: map[string]*relay{}}
		c.nodes[worker] = n
	}
	c.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.relays[target]; ok {
		return r, nil
	}
	p := &kafkaProxy{ch: c, worker: worker, hook: hook, nextID: nextID}
	r, err := startRelay(target, nextID, p.serve)
	if err != nil {
		return nil, err
	}
	n.relays[target] = r
	return r, nil
}

// Publish produces m (the broker id in the header KafkaIDHeader, the
// headers as record headers); its sequence is its offset + 1. Kafka's
// idempotent producer de-dupes only its own retries: dup is always false.
func (c *kafkaChannel) Publish(ctx context.Context, m mq.Message) (uint64, bool, error) {
	rec := &kgo.Record{Topic: c.topic, Partition: 0, Key: []byte(m.ID), Value: m.Payload,
		Headers: []kgo.RecordHeader{{Key: coservice.KafkaIDHeader, Value: []byte(m.ID)}}}
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(m.Headers[k])})
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.cl.ProduceSync(pctx, rec).FirstErr(); err != nil {
		return 0, false, err
	}
	return uint64(rec.Offset) + 1, false, nil
}

// Outstanding is the topic's end offset minus the group's committed offset
// (every record not yet committed, delivered or not).
func (c *kafkaChannel) Outstanding(ctx context.Context) (int, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := c.adm.ListEndOffsets(ictx, c.topic)
	if err != nil {
		return 0, err
	}
	end, ok := ends.Lookup(c.topic, 0)
	if !ok || end.Err != nil {
		return 0, fmt.Errorf("the end offset of %s: %v", c.topic, end.Err)
	}
	if c.share != nil {
		return c.shareOutstanding(ictx, end.Offset)
	}
	offs, err := c.adm.FetchOffsets(ictx, coservice.DurableName)
	if err != nil {
		return 0, err
	}
	var committed int64
	if o, ok := offs.Lookup(c.topic, 0); ok && o.Err == nil && o.At >= 0 {
		committed = o.At
	}
	return int(end.Offset - committed), nil
}

// Close stops the proxies and deletes the topic and the group.
func (c *kafkaChannel) Close() error {
	errs := []error{c.closeAll()}
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = nil
	c.mu.Unlock()
	for _, n := range nodes {
		n.mu.Lock()
		for _, r := range n.relays {
			_ = r.close() // the seed relay is closed twice: the second is a no-op
		}
		n.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	group := coservice.DurableName
	if c.share != nil {
		group = c.share.group
	}
	if _, err := c.adm.DeleteGroups(ctx, group); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.adm.DeleteTopics(ctx, c.topic); err != nil {
		errs = append(errs, err)
	}
	c.cl.Close()
	return errors.Join(errs...)
}

// acked takes a forwarded commit of offset at: the sequences it newly
// covers.
func (c *kafkaChannel) covers(at int64) []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var seqs []uint64
	for o := c.committed; o < at; o++ {
		seqs = append(seqs, uint64(o)+1)
	}
	return seqs
}

func (c *kafkaChannel) commit(at int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at > c.committed {
		c.committed = at
	}
}
