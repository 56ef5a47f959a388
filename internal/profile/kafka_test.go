package profile

import (
	"strings"
	"testing"
)

// TestKafkaIdempotenceInterplay is one case per row of docs/profile.md's
// Kafka producer table: what the Java client makes of enable.idempotence
// with acks, retries, max.in.flight and transactional.id (Kafka's
// documentation of enable.idempotence; ProducerConfig since KAFKA-13673).
func TestKafkaIdempotenceInterplay(t *testing.T) {
	for _, c := range []struct {
		name, kafka string
		refused     string // the load error; "" when the client starts
		hazardField string // kafka-no-idempotence's field; "" for none
	}{
		{"all defaults: idempotent", "{}", "", ""},
		{"unset with acks 1: silently off", `{acks: "1"}`, "", "producers[0].kafka.acks"},
		{"unset with retries 0: silently off", "{retries: 0}", "", "producers[0].kafka.retries"},
		{"unset with 6 in flight: silently off", "{maxInFlight: 6}", "", "producers[0].kafka.maxInFlight"},
		{"unset with 5 in flight: idempotent", "{maxInFlight: 5}", "", ""},
		{"explicit false", "{enableIdempotence: false}", "", "producers[0].kafka.enableIdempotence"},
		{"explicit true, all, 5: idempotent", "{enableIdempotence: true, acks: all, maxInFlight: 5}", "", ""},
		{"explicit true with acks 1: refused", `{enableIdempotence: true, acks: "1"}`, "producers[0].kafka.acks: enable.idempotence true with acks=1: the Kafka producer refuses to start", ""},
		{"explicit true with retries 0: refused", "{enableIdempotence: true, retries: 0}", "producers[0].kafka.retries: enable.idempotence true with retries 0: the Kafka producer refuses to start", ""},
		{"explicit true with 6 in flight: refused", "{enableIdempotence: true, maxInFlight: 6}", "producers[0].kafka.maxInFlight: enable.idempotence true with max.in.flight.requests.per.connection 6 > 5: the Kafka producer refuses to start", ""},
		{"transactional id without idempotence: refused", "{enableIdempotence: false, transactionalId: tx-1}", "producers[0].kafka.transactionalId: transactional.id tx-1 without idempotence", ""},
		{"transactional id, idempotence silently off: refused", `{transactionalId: tx-1, acks: "1"}`, "producers[0].kafka.transactionalId: transactional.id tx-1 without idempotence (enable.idempotence not set and acks=1 conflicts", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			yaml := kafkaHead + "    kafka: " + c.kafka + "\n" + kafkaBroker
			p, err := Parse("t.yaml", []byte(yaml))
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) || strings.Count(err.Error(), "\n") > 0 {
					t.Fatalf("got %v, want one line with %q", err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var h *Hazard
			for _, x := range Hazards(p) {
				if x.Check == "kafka-no-idempotence" {
					h = &x
				}
			}
			switch {
			case c.hazardField == "" && h != nil:
				t.Errorf("unexpected hazard: %s", h.Summary)
			case c.hazardField != "" && (h == nil || h.Field != c.hazardField):
				t.Errorf("want kafka-no-idempotence at %s, got %+v", c.hazardField, h)
			case h != nil && c.kafka != "{enableIdempotence: false}" && !strings.Contains(h.Summary, "silently disables idempotence"):
				t.Errorf("the hazard does not say the client turned it off: %s", h.Summary)
			}
		})
	}
}

// TestKafkaUndeclaredDefaults: an undeclared setting is Kafka's documented
// default, checked as if written out.
func TestKafkaUndeclaredDefaults(t *testing.T) {
	// min.insync.replicas left out is 1: the same hazard as a written 1.
	h := find(t, kafkaHead+kafkaBroker+"        replicas: 3\n", "kafka-min-isr")
	if h == nil || !strings.Contains(h.Summary, "min.insync.replicas not declared: 1, Kafka's default") {
		t.Errorf("undeclared min.insync.replicas: %+v", h)
	}
	if h := find(t, kafkaHead+kafkaBroker+"        replicas: 3\n        kafka: {cleanupPolicy: delete}\n", "kafka-min-isr"); h == nil {
		t.Error("a kafka block without minInsyncReplicas: no hazard")
	}
	// acks left out is all: no acks hazard.
	if h := find(t, kafkaHead+kafkaBroker, "kafka-acks"); h != nil {
		t.Errorf("acks undeclared is all, got %s", h.Summary)
	}
	// delivery.timeout.ms left out is 2m, against a declared expiry.
	h = find(t, kafkaHead+kafkaBroker+"    kafka: {producerIdExpiration: 1m}\n", "kafka-pid-expiry")
	if h == nil || !strings.Contains(h.Arithmetic[0], "delivery.timeout.ms 2m0s (the client default)) > producer.id.expiration.ms 1m0s") {
		t.Errorf("undeclared delivery timeout: %+v", h)
	}
	// producer.id.expiration.ms left out is 24h.
	h = find(t, kafkaHead+"    kafka: {deliveryTimeout: 25h}\n"+kafkaBroker, "kafka-pid-expiry")
	if h == nil || !strings.Contains(h.Arithmetic[0], "producer.id.expiration.ms 24h0m0s (the broker default)") {
		t.Errorf("undeclared producer id expiry: %+v", h)
	}
	// retention.bytes and max.message.bytes left out are -1 and 1048588.
	p, err := Parse("t.yaml", []byte(kafkaHead+kafkaBroker))
	if err != nil {
		t.Fatal(err)
	}
	if pl := strings.Join(kindPipeline(p), "\n"); !strings.Contains(pl, "retention.bytes -1, max.message.bytes 1048588") || !strings.Contains(pl, "min.insync.replicas 1") {
		t.Errorf("pipeline without the defaults:\n%s", pl)
	}
}

// TestKafkaResendIsNewRecord: the producer-id expiry is about the client's
// own retries; an application re-send is a new record whatever the
// producer id's state, which retry-past-window names.
func TestKafkaResendIsNewRecord(t *testing.T) {
	y := kafkaHead + "    retries: [3h]\n" + kafkaBroker + "    kafka: {producerIdExpiration: 1h}\n"
	if h := find(t, y, "kafka-pid-expiry"); h != nil {
		t.Errorf("an application re-send is not the producer id's: %s", h.Summary)
	}
	if h := find(t, y, "retry-past-window"); h == nil || !strings.Contains(h.Summary, "no producer de-dupe window") {
		t.Errorf("the re-send at 3h is stored again: %+v", h)
	}
	h := find(t, kafkaHead+"    kafka: {deliveryTimeout: 2h}\n"+kafkaBroker+"    kafka: {producerIdExpiration: 1h}\n", "kafka-pid-expiry")
	if h == nil || !strings.Contains(strings.Join(h.Arithmetic, "\n"), "an application re-send is a new record") {
		t.Errorf("the hazard does not say re-sends are not its: %+v", h)
	}
}

const redisIDMP = `schema: onceproof.profile/v1
name: t
producers:
  - name: api
    broker: cache
    stream: orders
    keepsMessageId: true
    retries: [30s, 2m]
brokers:
  - name: cache
    kind: redis
    redis:
      appendOnly: true
      appendFsync: always
`

// TestRedisIDMP: XADD IDMP is accepted on a declared 8.6 server and its
// window (100 s by default) is what the retry arithmetic uses; before 8.6,
// or with no version, the profile is refused naming the field.
func TestRedisIDMP(t *testing.T) {
	stream := "    streams:\n      - name: orders\n        redis:\n          idmp: %s\n"
	ok := redisIDMP + "      version: 8.6.0\n" + strings.Replace(stream, "%s", "{}", 1)
	h := find(t, ok, "retry-past-window")
	if h == nil || h.Field != "producers[0].retries[1]" {
		t.Fatalf("the retry at 2m is past the 100s window: %+v", h)
	}
	ar := strings.Join(h.Arithmetic, "\n")
	for _, w := range []string{"IDMP-DURATION 1m40s (Redis's default)", "IDMP-MAXSIZE 100", "retry at 30s < window 1m40s: de-duped", "retry at 2m0s >= window 1m40s"} {
		if !strings.Contains(ar, w) {
			t.Errorf("arithmetic without %q:\n%s", w, ar)
		}
	}
	p, err := Parse("t.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if r := Acks(p)[0]; !strings.Contains(r.Ack, "XADD IDMP") || !strings.Contains(r.Proves, "within 1m40s") {
		t.Errorf("the publish ack row: %+v", r)
	}
	if h := find(t, redisIDMP+"      version: \"8.6\"\n"+strings.Replace(stream, "%s", "{duration: 5m, maxSize: 1000}", 1), "retry-past-window"); h != nil {
		t.Errorf("both retries are inside a 5m window: %s", h.Summary)
	}
	if h := find(t, redisIDMP+strings.Replace(stream, "%s", "{}", 1)[0:0]+"    streams:\n      - name: orders\n", "retry-past-window"); h == nil || !strings.Contains(h.Summary, "no producer de-dupe window") {
		t.Errorf("without IDMP every retry is stored again: %+v", h)
	}
	for _, c := range []struct{ yaml, want string }{
		{redisIDMP + "      version: 7.2.4\n" + strings.Replace(stream, "%s", "{}", 1), "t.yaml:19: brokers[0].streams[0].redis.idmp: XADD IDMP needs Redis 8.6 or later; the profile declares version 7.2.4"},
		{redisIDMP + strings.Replace(stream, "%s", "{}", 1), "brokers[0].streams[0].redis.idmp: XADD IDMP needs Redis 8.6 or later: declare the server's version at brokers[0].redis.version"},
		{redisIDMP + "      version: eight\n" + strings.Replace(stream, "%s", "{}", 1), "brokers[0].redis.version: \"eight\""},
		{redisIDMP + "      version: 8.6.0\n" + strings.Replace(stream, "%s", "{duration: 1500ms}", 1), "brokers[0].streams[0].redis.idmp.duration: 1.5s: IDMP-DURATION is whole seconds"},
		{redisIDMP + "      version: 8.6.0\n" + strings.Replace(stream, "%s", "{maxSize: 20000}", 1), "brokers[0].streams[0].redis.idmp.maxSize: 20000"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line with %q", err, c.want)
		}
	}
}
