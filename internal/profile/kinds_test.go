package profile

import (
	"strings"
	"testing"
)

const natsHead = `schema: onceproof.profile/v1
name: t
producers:
  - name: api
    broker: main
    stream: S
    subject: orders.created
    keepsMessageId: true
brokers:
  - name: main
    kind: nats
    streams:
      - name: S
        subjects: [orders.>]
`

const redisHead = `schema: onceproof.profile/v1
name: t
brokers:
  - name: cache
    kind: redis
`

const redisSafe = `    redis:
      appendOnly: true
      appendFsync: always
`

const kafkaHead = `schema: onceproof.profile/v1
name: t
producers:
  - name: api
    broker: events
    stream: orders
    keepsMessageId: true
`

const kafkaBroker = `brokers:
  - name: events
    kind: kafka
    streams:
      - name: orders
`

const workerYAML = `consumers:
  - name: app
    broker: cache
    stream: orders
    brokerConsumer: workers
    processingTime: 10s
    scopes: [{name: Index, effect: versioned-upsert}]
    ackOrder: effect-then-ack
`

// TestKindChecks: every product-setting check fires on its trigger, with
// its rule, arithmetic, a timeline and the line of the field, and not on
// the safe variant.
func TestKindChecks(t *testing.T) {
	cases := []struct {
		check, trigger string
		not            []string
	}{
		{"nats-discard-new", natsHead + "        discard: new\n        maxMsgs: 5\n", []string{natsHead + "        discard: old\n        maxMsgs: 5\n"}},
		{"nats-filter-mismatch", natsHead + "        consumers:\n          - name: w\n            filterSubjects: [orders.other]\n",
			[]string{natsHead + "        consumers:\n          - name: w\n            filterSubjects: [orders.*]\n", natsHead + "        consumers:\n          - name: w\n            filterSubjects: [\">\"]\n"}},
		{"nats-deliver-not-all", natsHead + "        consumers:\n          - name: w\n            deliverPolicy: new\n", []string{natsHead + "        consumers:\n          - name: w\n            deliverPolicy: all\n"}},
		{"nats-ack-pending-stalls", natsHead + "        consumers:\n          - name: workers\n            maxAckPending: 1\n" + strings.ReplaceAll(strings.ReplaceAll(workerYAML, "cache", "main"), "orders", "S") + "    workers: 4\n",
			[]string{natsHead + "        consumers:\n          - name: workers\n            maxAckPending: 4\n" + strings.ReplaceAll(strings.ReplaceAll(workerYAML, "cache", "main"), "orders", "S") + "    workers: 4\n"}},
		{"redis-eviction", redisHead + "    redis:\n      appendOnly: true\n      appendFsync: always\n      maxmemoryPolicy: allkeys-lru\n", []string{redisHead + redisSafe + "      maxmemoryPolicy: volatile-lru\n"}},
		{"redis-fsync", redisHead + "    redis:\n      appendOnly: true\n", []string{redisHead + redisSafe}},
		{"redis-trim-pending", redisHead + redisSafe + "    streams:\n      - name: orders\n        redis: {trim: maxlen, maxLen: 1000, approximate: true}\n        consumers:\n          - name: workers\n            redis: {claimMinIdle: 30s}\n",
			[]string{redisHead + redisSafe + "    streams:\n      - name: orders\n        redis: {trim: minid, minIdAge: 24h}\n        consumers:\n          - name: workers\n            redis: {claimMinIdle: 30s}\n"}},
		{"redis-claim-before-done", redisHead + redisSafe + "    streams:\n      - name: orders\n        consumers:\n          - name: workers\n            redis: {claimMinIdle: 5s}\n" + workerYAML,
			[]string{redisHead + redisSafe + "    streams:\n      - name: orders\n        consumers:\n          - name: workers\n            redis: {claimMinIdle: 60s}\n" + workerYAML}},
		{"kafka-no-idempotence", kafkaHead + "    kafka: {enableIdempotence: false}\n" + kafkaBroker, []string{kafkaHead + "    kafka: {enableIdempotence: true, maxInFlight: 5}\n" + kafkaBroker}},
		{"kafka-acks", kafkaHead + "    kafka: {acks: \"1\"}\n" + kafkaBroker, []string{kafkaHead + "    kafka: {acks: all}\n" + kafkaBroker}},
		{"kafka-min-isr", kafkaHead + kafkaBroker + "        replicas: 3\n        kafka: {minInsyncReplicas: 1}\n", []string{kafkaHead + kafkaBroker + "        replicas: 3\n        kafka: {minInsyncReplicas: 2}\n"}},
		{"kafka-pid-expiry", kafkaHead + "    kafka: {deliveryTimeout: 2h}\n" + kafkaBroker + "    kafka: {producerIdExpiration: 1h}\n",
			[]string{kafkaHead + "    kafka: {deliveryTimeout: 2m}\n" + kafkaBroker + "    kafka: {producerIdExpiration: 1h}\n"}},
		{"kafka-retention-replay", kafkaHead + kafkaBroker + "        maxAge: 24h\n        consumers: [{name: billing}]\nconsumers:\n  - name: app\n    broker: events\n    stream: orders\n    brokerConsumer: billing\n    maxReplayAge: 72h\n    scopes: [{name: Index, effect: versioned-upsert}]\n    ackOrder: effect-then-ack\n",
			[]string{kafkaHead + kafkaBroker + "        maxAge: 96h\n        consumers: [{name: billing}]\nconsumers:\n  - name: app\n    broker: events\n    stream: orders\n    brokerConsumer: billing\n    maxReplayAge: 72h\n    scopes: [{name: Index, effect: versioned-upsert}]\n    ackOrder: effect-then-ack\n"}},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[c.check] = true
		t.Run(c.check, func(t *testing.T) {
			h := find(t, c.trigger, c.check)
			if h == nil {
				t.Fatalf("no %s hazard in\n%s", c.check, c.trigger)
			}
			if h.Rule != checkByID(c.check).Rule || len(h.Arithmetic) == 0 || len(h.Timeline) == 0 || h.Line == 0 || h.Field == "" {
				t.Errorf("incomplete hazard %+v", h)
			}
			for _, n := range c.not {
				if h := find(t, n, c.check); h != nil {
					t.Errorf("unexpected %s hazard (%s) in\n%s", c.check, h.Summary, n)
				}
			}
		})
	}
	for _, c := range KindChecks() {
		if !tested[c.ID] {
			t.Errorf("check %s has no test case", c.ID)
		}
	}
}

// TestKindArithmetic: the numbers a hazard shows are the declared ones.
func TestKindArithmetic(t *testing.T) {
	h := find(t, redisHead+redisSafe+"    streams:\n      - name: orders\n        redis: {trim: maxlen, maxLen: 1000}\n        consumers:\n          - name: workers\n            redis: {claimMinIdle: 30s}\n"+workerYAML, "redis-trim-pending")
	if h == nil || !strings.Contains(strings.Join(h.Arithmetic, "\n"), "1000 entries / 40s = 25.0 entries/s") {
		t.Errorf("trim arithmetic: %+v", h)
	}
	h = find(t, kafkaHead+"    kafka: {deliveryTimeout: 3h}\n"+kafkaBroker+"    kafka: {producerIdExpiration: 1h}\n", "kafka-pid-expiry")
	if h == nil || h.Field != "producers[0].kafka.deliveryTimeout" || !strings.Contains(h.Arithmetic[0], "client retry horizon 3h0m0s (delivery.timeout.ms 3h0m0s) > producer.id.expiration.ms 1h0m0s") {
		t.Errorf("producer-id arithmetic: %+v", h)
	}
}

// TestKindRefusals: a setting of another product, or one the product
// refuses, is a malformed profile naming the field and line.
func TestKindRefusals(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{redisHead + "    streams:\n      - name: orders\n        discard: new\n", "t.yaml:8: brokers[0].streams[0].discard: discard is a NATS stream setting, not redis"},
		{natsHead + "    redis: {appendOnly: true}\n", "brokers[0].redis: a redis block on a nats broker"},
		{redisHead + "    streams:\n      - name: orders\n        redis: {trim: maxlen}\n", "brokers[0].streams[0].redis.maxLen: trim maxlen needs maxLen"},
		{kafkaHead + kafkaBroker + "        replicas: 1\n        kafka: {minInsyncReplicas: 2}\n", "brokers[0].streams[0].kafka.minInsyncReplicas: 2 is above the 1 replicas"},
		{natsHead + "    kafka: {producerIdExpiration: 1h}\n", "brokers[0].kafka: a kafka block on a nats broker"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
