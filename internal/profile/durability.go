package profile

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
)

// Durability is what a pipeline relies on of an acknowledged publish on
// one broker (issue 38, item 3).
type Durability struct {
	// SurvivePowerLoss: the pipeline relies on an acknowledged publish
	// surviving a power loss of the broker's nodes, all of them at once
	// included (a rack or a zone). The sync settings below must put it on
	// a disk before the ack, or on another node's disk that keeps power;
	// absent: false, and the settings are only compared (BR-6.1).
	SurvivePowerLoss bool `yaml:"survivePowerLoss" json:"survivePowerLoss"`
}

// NATSServer is what a team relies on of its NATS server's JetStream
// configuration: the sync settings, which the server shows on its
// monitoring endpoint (/varz) or to the system account, not to a client.
type NATSServer struct {
	// SyncInterval is jetstream sync_interval: how often the server
	// fsyncs file-stored streams; an ack comes before it (absent: 2m, the
	// NATS default).
	SyncInterval Duration `yaml:"syncInterval" json:"syncInterval,omitempty"`
	// SyncAlways is sync_interval: always, an fsync on every write before
	// the ack (absent: false).
	SyncAlways bool `yaml:"syncAlways" json:"syncAlways"`
	// MonitoringURL is the server's HTTP monitoring endpoint
	// (http://HOST:8222): BR-6.1 reads /varz there. Absent: only a
	// system-account connection can read the sync settings.
	MonitoringURL string `yaml:"monitoringUrl" json:"monitoringUrl,omitempty"`
}

// NATSDefaultSyncInterval is JetStream's sync_interval when none is set
// (server/filestore.go defaultSyncInterval; docs.nats.io, sync_interval).
const NATSDefaultSyncInterval = 2 * time.Minute

// KafkaDefaultFlush is flush.messages' and flush.ms's default: Long.MAX,
// never: Kafka leaves the flush to the OS and relies on replication.
const KafkaDefaultFlush = math.MaxInt64

// Sync is the server's sync settings as declared or their defaults.
func (n *NATSServer) Sync() (interval time.Duration, always bool) {
	if n == nil {
		return NATSDefaultSyncInterval, false
	}
	if n.SyncInterval > 0 {
		return n.SyncInterval.D(), n.SyncAlways
	}
	return NATSDefaultSyncInterval, n.SyncAlways
}

// SurvivesPowerLoss says whether the broker's pipeline relies on acked
// publishes surviving a power loss.
func (b *Broker) SurvivesPowerLoss() bool {
	return b.Durability != nil && b.Durability.SurvivePowerLoss
}

// Flush is a topic's flush.messages and flush.ms, the default (never)
// where undeclared.
func (t *KafkaTopic) Flush() (messages, ms int) {
	messages, ms = KafkaDefaultFlush, KafkaDefaultFlush
	if t != nil && t.FlushMessages > 0 {
		messages = t.FlushMessages
	}
	if t != nil && t.FlushMs > 0 {
		ms = t.FlushMs
	}
	return messages, ms
}

// flushText writes a flush setting; the default says it is never.
func flushText(name string, v int) string {
	if v == KafkaDefaultFlush {
		return name + " not set (Long.MAX: never, the OS flushes)"
	}
	return fmt.Sprintf("%s %d", name, v)
}

// validateDurability refuses a nats block elsewhere and what the NATS
// server refuses of it.
func (p *Profile) validateDurability() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if b.NATS != nil && b.Kind != KindNATS {
			return bad(bp+".nats", "a nats block on a %s broker", b.Kind)
		}
		if n := b.NATS; n != nil {
			switch {
			case n.SyncInterval < 0:
				return bad(bp+".nats.syncInterval", "must not be negative")
			case n.SyncAlways && n.SyncInterval != 0:
				// NATS takes one: sync_interval: always, or a duration.
				return bad(bp+".nats.syncInterval", "syncAlways true fsyncs every write: leave syncInterval out (NATS's sync_interval is either always or a duration)")
			}
			if n.MonitoringURL != "" {
				u, err := url.Parse(n.MonitoringURL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					// The text is not echoed: a URL may carry a password.
					return bad(bp+".nats.monitoringUrl", "not an http(s)://HOST:PORT URL of the server's monitoring endpoint")
				}
			}
		}
		for j, s := range b.Streams {
			if k := s.Kafka; k != nil && (k.FlushMessages < 0 || k.FlushMs < 0) {
				return bad(fmt.Sprintf("%s.streams[%d].kafka", bp, j), "flushMessages and flushMs must not be negative (leave them out for Kafka's default, never)")
			}
		}
	}
	return nil
}

// durabilityChecks are the power-loss checks; they follow kindChecks.
var durabilityChecks = []Check{
	{"nats-sync-power-loss", "BR-3.1", "the pipeline relies on acked publishes surviving a power loss; JetStream acks before its periodic fsync"},
	{"kafka-flush-power-loss", "BR-3.1", "the pipeline relies on acked records surviving a power loss; the topic neither fsyncs before the ack nor keeps a second in-sync copy"},
	{"rabbitmq-queue-power-loss", "BR-3.1", "the pipeline relies on confirmed publishes surviving a power loss; the queue type does not cover it (classic: one node, not replicated; stream: no fsync)"},
}

// DurabilityChecks lists the power-loss checks.
func DurabilityChecks() []Check { return append([]Check(nil), durabilityChecks...) }

// durability runs the power-loss checks of the brokers that rely on one.
func (f *finder) durability() {
	for i := range f.p.Brokers {
		b := &f.p.Brokers[i]
		if !b.SurvivesPowerLoss() {
			continue
		}
		switch b.Kind {
		case KindNATS:
			f.natsPowerLoss(i, b)
		case KindKafka:
			f.kafkaPowerLoss(i, b)
		case KindRabbitMQ:
			f.rabbitPowerLoss(i, b)
		}
		// Redis: redis-fsync names appendonly/appendfsync whatever the
		// profile relies on (redis.go).
	}
}

func (f *finder) natsPowerLoss(i int, b *Broker) {
	bp := fmt.Sprintf("brokers[%d]", i)
	interval, always := b.NATS.Sync()
	var memory []string
	for _, s := range b.Streams {
		if s.Storage == StorageMemory {
			memory = append(memory, s.Name)
		}
	}
	if always && len(memory) == 0 {
		return
	}
	field := bp + ".durability.survivePowerLoss"
	how := fmt.Sprintf("sync_interval %s", Duration(interval))
	if b.NATS == nil || b.NATS.SyncInterval == 0 {
		how += " (not declared: the NATS default)"
	}
	if b.NATS != nil {
		field = bp + ".nats"
	}
	var arith []string
	if !always {
		arith = append(arith,
			fmt.Sprintf("%s, sync_always false: JetStream acknowledges a publish once it is in the OS page cache and fsyncs every %s; up to %s of acknowledged publishes are on no disk when the power goes", how, Duration(interval), Duration(interval)),
			"replicas do not cover a power loss of every node at once: each replica acks from its page cache too (Jepsen, NATS 2.12.1: a coordinated power loss lost 131 418 of 930 005 acknowledged messages)",
			"sync_interval: always (syncAlways: true) fsyncs every write before the ack, at a cost in throughput")
	}
	if len(memory) > 0 {
		arith = append(arith, fmt.Sprintf("storage memory on %s: every stored message is lost with the power, whatever the sync setting", strings.Join(memory, ", ")))
	}
	f.add("nats-sync-power-loss", "nats "+b.Name, field,
		fmt.Sprintf("the pipeline relies on acknowledged publishes surviving a power loss, but %s: a coordinated power loss loses what was acked since the last fsync", map[bool]string{true: "a memory stream keeps them in RAM", false: fmt.Sprintf("JetStream fsyncs only every %s", Duration(interval))}[always]),
		arith,
		Mark{Text: "last fsync"},
		Mark{At: Duration(interval / 2), Text: "publish: stored in the page cache, acknowledged"},
		Mark{At: Duration(interval/2 + time.Second), Label: "t0+", Text: "every node loses power before the next fsync: the acknowledged publish is gone after the restart"})
}

func (f *finder) kafkaPowerLoss(i int, b *Broker) {
	for j := range b.Streams {
		s := &b.Streams[j]
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		msgs, ms := s.Kafka.Flush()
		if msgs == 1 {
			continue // every record is fsynced before the produce is answered
		}
		mis, _ := s.Kafka.MinISR()
		rf := max(s.Replicas, 1)
		var weak []string // why an ack may rest on one page cache
		for _, pr := range f.p.Producers {
			if pr.Broker == b.Name && pr.Stream == s.Name && pr.Kafka != nil && orDefault(string(pr.Kafka.Acks), string(AcksAll)) != string(AcksAll) {
				weak = append(weak, fmt.Sprintf("producer %s acks=%s", pr.Name, pr.Kafka.Acks))
			}
		}
		if rf < 2 {
			weak = append(weak, fmt.Sprintf("replication factor %d", rf))
		} else if mis < 2 {
			weak = append(weak, fmt.Sprintf("min.insync.replicas %d", mis))
		}
		if len(weak) == 0 {
			continue // acks=all waits for min.insync.replicas >= 2 copies on separate nodes
		}
		arith := []string{
			fmt.Sprintf("%s, %s: the broker writes the record to the page cache and answers; no fsync comes before the ack", flushText("flush.messages", msgs), flushText("flush.ms", ms)),
			fmt.Sprintf("%s: an acknowledged record may be in one broker's page cache only", strings.Join(weak, ", ")),
			"cover it with replication factor 3, min.insync.replicas 2 and acks=all (the copies on nodes that do not lose power together), or flush.messages 1 (an fsync per record)",
		}
		if ms != KafkaDefaultFlush {
			arith = append(arith, fmt.Sprintf("flush.ms %d: up to %d ms of acknowledged records are on no disk", ms, ms))
		}
		field := sp + ".kafka.flushMessages"
		if s.Kafka == nil || s.Kafka.FlushMessages == 0 {
			field = fmt.Sprintf("brokers[%d].durability.survivePowerLoss", i)
		}
		f.add("kafka-flush-power-loss", fmt.Sprintf("kafka %s/%s", b.Name, s.Name), field,
			fmt.Sprintf("the pipeline relies on acknowledged records surviving a power loss, but topic %s fsyncs no record before the ack and keeps no second in-sync copy (%s): a power loss of that broker loses it", s.Name, strings.Join(weak, ", ")),
			arith,
			Mark{Label: "t0", Text: "produce r1: in the leader's page cache, acknowledged"},
			Mark{Label: "t0+", Text: "the leader loses power before the OS flushes: r1 is on no disk and no other replica"})
	}
}

func (f *finder) rabbitPowerLoss(i int, b *Broker) {
	for j := range b.Streams {
		s := &b.Streams[j]
		sp := fmt.Sprintf("brokers[%d].streams[%d]", i, j)
		typ := QueueClassic
		if s.RabbitMQ != nil && s.RabbitMQ.Type != "" {
			typ = s.RabbitMQ.Type
		}
		var arith []string
		var last string
		switch typ {
		case QueueQuorum:
			continue // Raft: fsynced on a quorum of nodes before the confirm
		case QueueClassic:
			arith = []string{
				"x-queue-type classic (or not declared: the default): the queue and its messages live on one node, not replicated",
				"a confirm comes after the message store has written a persistent message (delivery mode 2) of a durable queue to that node's disk; a transient message or queue is in memory only",
				"a node that does not come back (its disk lost, or a transient message) loses every confirmed message of the queue; a quorum queue keeps them fsynced on a majority of nodes",
			}
			last = "the node does not come back, or the message was transient: the confirmed message is gone"
		case QueueStream:
			arith = []string{
				"x-queue-type stream: the confirm comes once a quorum of replicas have written the message, but a stream does not fsync: it leaves the flush to the OS",
				"a power loss of the nodes holding that quorum loses confirmed messages still in their page caches; a quorum queue fsyncs before its confirm",
			}
			last = "the replicas lose power before the OS flushes: the confirmed message is gone"
		default:
			continue
		}
		f.add("rabbitmq-queue-power-loss", fmt.Sprintf("rabbitmq %s/%s", b.Name, s.Name), sp+".rabbitmq.type",
			fmt.Sprintf("the pipeline relies on confirmed publishes surviving a power loss, but queue %s is a %s queue: %s", s.Name, typ, map[QueueType]string{QueueClassic: "one copy on one node, not replicated", QueueStream: "replicated but not fsynced before the confirm"}[typ]),
			arith,
			Mark{Label: "t0", Text: "publish: confirmed"},
			Mark{Label: "t0+", Text: "power loss: " + last})
	}
}
