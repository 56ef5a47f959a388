package profile

import (
	"os"
	"strings"
	"testing"
)

const relies = "    durability: {survivePowerLoss: true}\n"

// TestDurabilityChecks: each power-loss check fires when the pipeline
// relies on surviving a power loss and the declared (or default) settings
// do not cover it, with its arithmetic and the line of its field; it is
// absent when the settings cover it, and when the pipeline does not rely
// on it.
func TestDurabilityChecks(t *testing.T) {
	quorum := "        rabbitmq: {type: quorum}\n"
	cases := []struct {
		check, trigger string
		arith          []string
		not            []string
	}{
		{"nats-sync-power-loss", natsHead + relies,
			[]string{"sync_interval 2m0s (not declared: the NATS default), sync_always false", "up to 2m0s of acknowledged publishes", "131 418 of 930 005"},
			[]string{natsHead, natsHead + relies + "    nats: {syncAlways: true}\n"}},
		{"nats-sync-power-loss", natsHead + relies + "    nats: {syncInterval: 10s}\n",
			[]string{"sync_interval 10s, sync_always false", "up to 10s of acknowledged publishes"}, nil},
		{"nats-sync-power-loss", natsHead + "        storage: memory\n" + relies + "    nats: {syncAlways: true}\n",
			[]string{"storage memory on S"}, nil},
		{"kafka-flush-power-loss", kafkaHead + kafkaBroker + relies,
			[]string{"flush.messages not set (Long.MAX: never, the OS flushes)", "replication factor 1: an acknowledged record may be in one broker's page cache only"},
			[]string{kafkaHead + kafkaBroker,
				kafkaHead + kafkaBroker + "        replicas: 3\n        kafka: {minInsyncReplicas: 2}\n" + relies,
				kafkaHead + kafkaBroker + "        kafka: {flushMessages: 1}\n" + relies}},
		{"kafka-flush-power-loss", kafkaHead + kafkaBroker + "        replicas: 3\n        kafka: {flushMs: 1000}\n" + relies,
			[]string{"min.insync.replicas 1", "flush.ms 1000: up to 1000 ms"}, nil},
		{"kafka-flush-power-loss", kafkaHead + "    kafka: {acks: \"1\", enableIdempotence: false}\n" + kafkaBroker + "        replicas: 3\n        kafka: {minInsyncReplicas: 2}\n" + relies,
			[]string{"producer api acks=1"}, nil},
		{"rabbitmq-queue-power-loss", rabbitHead + relies + "    streams:\n      - name: q\n",
			[]string{"classic (or not declared: the default)", "not replicated"},
			[]string{rabbitHead + "    streams:\n      - name: q\n", rabbitHead + relies + "    streams:\n      - name: q\n" + quorum}},
		{"rabbitmq-queue-power-loss", rabbitHead + relies + "    streams:\n      - name: q\n        rabbitmq: {type: stream}\n",
			[]string{"a stream does not fsync"}, nil},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[c.check] = true
		h := find(t, c.trigger, c.check)
		if h == nil {
			t.Errorf("no %s hazard in\n%s", c.check, c.trigger)
			continue
		}
		if h.Rule != "BR-3.1" || len(h.Timeline) == 0 || h.Line == 0 || h.Field == "" {
			t.Errorf("incomplete hazard %+v", h)
		}
		arith := strings.Join(h.Arithmetic, "\n")
		for _, s := range c.arith {
			if !strings.Contains(arith, s) {
				t.Errorf("%s arithmetic lacks %q:\n%s", c.check, s, arith)
			}
		}
		for _, n := range c.not {
			if h := find(t, n, c.check); h != nil {
				t.Errorf("unexpected %s hazard (%s) in\n%s", c.check, h.Summary, n)
			}
		}
	}
	for _, c := range DurabilityChecks() {
		if !tested[c.ID] {
			t.Errorf("check %s has no test case", c.ID)
		}
	}
}

// TestDurabilityDefaults: undeclared sync and flush settings are the
// documented defaults.
func TestDurabilityDefaults(t *testing.T) {
	var n *NATSServer
	if i, a := n.Sync(); i != NATSDefaultSyncInterval || a {
		t.Errorf("NATS default sync: %s, always %t", i, a)
	}
	var k *KafkaTopic
	if m, ms := k.Flush(); m != KafkaDefaultFlush || ms != KafkaDefaultFlush || KafkaDefaultFlush != 9223372036854775807 {
		t.Errorf("Kafka default flush: %d, %d", m, ms)
	}
}

// TestDurabilityRefusals: a nats block elsewhere, both sync forms at once,
// a monitoring URL that is not one (not echoed: it may hold a password).
func TestDurabilityRefusals(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{redisHead + "    nats: {syncAlways: true}\n", "brokers[0].nats: a nats block on a redis broker"},
		{natsHead + "    nats: {syncAlways: true, syncInterval: 1s}\n", "brokers[0].nats.syncInterval: syncAlways true fsyncs every write"},
		{natsHead + "    nats: {monitoringUrl: \"ftp://u:s3cret@h\"}\n", "brokers[0].nats.monitoringUrl: not an http(s)://HOST:PORT URL"},
		{kafkaHead + kafkaBroker + "        kafka: {flushMessages: -1}\n", "brokers[0].streams[0].kafka: flushMessages and flushMs must not be negative"},
		{natsHead + "    durability: {survivePowerLoss: yes-please}\n", "brokers[0].durability.survivePowerLoss"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestDurabilityDocumented: docs/profile.md names every power-loss check
// and its defaults' sources.
func TestDurabilityDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/profile.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range DurabilityChecks() {
		if !strings.Contains(string(doc), "| `"+c.ID+"` | "+c.Rule+" |") {
			t.Errorf("docs/profile.md has no row for %s", c.ID)
		}
	}
	for _, s := range []string{"docs.nats.io/reference/config/jetstream/sync_interval", "kafka.apache.org/documentation/#topicconfigs", "rabbitmq.com/docs/confirms", "9223372036854775807"} {
		if !strings.Contains(string(doc), s) {
			t.Errorf("docs/profile.md's durability table lacks %s", s)
		}
	}
}

// TestPowerLossExample: examples/profiles/power-loss.yaml names every
// power-loss check, each at the line of its field.
func TestPowerLossExample(t *testing.T) {
	p, err := Load("../../examples/profiles/power-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Hazard{}
	for _, h := range Hazards(p) {
		got[h.Check] = h
	}
	want := map[string]string{
		"nats-sync-power-loss":      "up to 2m0s of acknowledged publishes",
		"kafka-flush-power-loss":    "min.insync.replicas 1: an acknowledged record may be in one broker's page cache only",
		"rabbitmq-queue-power-loss": "not replicated",
	}
	for _, c := range DurabilityChecks() {
		h, ok := got[c.ID]
		if !ok {
			t.Errorf("no %s hazard in the example", c.ID)
			continue
		}
		if !strings.Contains(strings.Join(h.Arithmetic, "\n"), want[c.ID]) || h.Line == 0 {
			t.Errorf("%s: %+v", c.ID, h)
		}
	}
}
