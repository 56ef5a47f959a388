package profile

import (
	"strings"
	"testing"
)

const shareHead = kafkaHead + `brokers:
  - name: events
    kind: kafka
    streams:
      - name: orders
        consumers:
          - name: workers
`

const shareApp = `consumers:
  - name: app
    broker: events
    stream: orders
    brokerConsumer: workers
    processingTime: %s
    scopes: [{name: Index, effect: versioned-upsert}]
    ackOrder: effect-then-ack
`

func shareYAML(group, processing string) string {
	return shareHead + "            kafkaShare: " + group + "\n" + strings.Replace(shareApp, "%s", processing, 1)
}

func shareHazard(t *testing.T, yaml, check string) *Hazard {
	t.Helper()
	p, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	for _, h := range Hazards(p) {
		if h.Check == check {
			return &h
		}
	}
	return nil
}

// TestShareLockUnderProcessing: a lock (the cluster's default 30 s when
// nothing is declared) shorter than the processing time is a hazard with
// the deliveries per 100 records; a lock above it, or a member that
// renews, is not.
func TestShareLockUnderProcessing(t *testing.T) {
	h := shareHazard(t, shareYAML("{}", "75s"), "share-lock-under-processing")
	if h == nil {
		t.Fatal("no hazard for a 30s default lock under 75s of processing")
	}
	all := strings.Join(h.Arithmetic, "\n")
	for _, want := range []string{"lock 30s (Kafka's default) < processing 1m15s", "ceil(1m15s / 30s) = 3 deliveries", "delivered 5 times", "per 100 such records, 500 deliveries, up to 500 effects, 100 records archived"} {
		if !strings.Contains(all, want) {
			t.Errorf("arithmetic lacks %q:\n%s", want, all)
		}
	}
	if h.Rule != "BR-9.3" || h.Field != "consumers[0].processingTime" || h.Line == 0 || len(h.Timeline) == 0 {
		t.Errorf("hazard %+v", h)
	}
	// The group's lock wins over the cluster's, and the group's limit too.
	h = shareHazard(t, shareYAML("{recordLockDuration: 20s, deliveryCountLimit: 3}", "50s"), "share-lock-under-processing")
	if h == nil || !strings.Contains(strings.Join(h.Arithmetic, "\n"), "lock 20s (the group's share.record.lock.duration.ms)") || !strings.Contains(strings.Join(h.Arithmetic, "\n"), "delivered 3 times") {
		t.Errorf("group settings: %+v", h)
	}
	for _, ok := range []string{shareYAML("{recordLockDuration: 90s}", "75s"), shareYAML("{renewsLock: true}", "75s"), shareYAML("{}", "10s")} {
		if h := shareHazard(t, ok, "share-lock-under-processing"); h != nil {
			t.Errorf("unexpected hazard %s in\n%s", h.Summary, ok)
		}
	}
	// The cluster's declared lock is used when the group has none.
	cluster := strings.Replace(shareYAML("{}", "75s"), "    kind: kafka\n", "    kind: kafka\n    kafkaShare: {recordLockDuration: 2m}\n", 1)
	if h := shareHazard(t, cluster, "share-lock-under-processing"); h != nil {
		t.Errorf("a 2m cluster lock over 75s: %s", h.Summary)
	}
}

// TestShareLimitBeforeRetries: retries that need more deliveries than the
// limit (each lock that ends between two retries counts one) are a hazard.
func TestShareLimitBeforeRetries(t *testing.T) {
	h := shareHazard(t, shareYAML("{recordLockDuration: 60s, deliveryCountLimit: 4, retries: [1m, 5m, 15m]}", "2s"), "share-limit-before-retries")
	if h == nil {
		t.Fatal("no hazard for 16 deliveries under a limit of 4")
	}
	if !strings.Contains(h.Arithmetic[0], "= 16 deliveries") || !strings.Contains(h.Arithmetic[1], "16 > 4") || h.Rule != "BR-9.1" || !strings.HasSuffix(h.Field, "kafkaShare.retries[2]") {
		t.Errorf("hazard %+v", h)
	}
	if got := ShareRetryDeliveries(30e9, []Duration{Duration(10e9), Duration(40e9)}); got != 3 {
		t.Errorf("retries at 10s and 40s under a 30s lock: %d deliveries, want 3 (1 + ceil(10/30) + ceil(30/30))", got)
	}
	if h := shareHazard(t, shareYAML("{retries: [10s, 20s]}", "2s"), "share-limit-before-retries"); h != nil {
		t.Errorf("3 deliveries under the default 5: %s", h.Summary)
	}
}

// TestShareArchiveNoDLQ: a share group without a dead-letter topic loses
// what it archives; one with errors.deadletterqueue.topic.name does not.
func TestShareArchiveNoDLQ(t *testing.T) {
	h := shareHazard(t, shareYAML("{deliveryCountLimit: 3}", "1s"), "share-archive-no-dlq")
	if h == nil || h.Rule != "BR-9.2" || !strings.Contains(h.Arithmetic[0], "delivery count limit 3 (the group's share.delivery.count.limit)") || !strings.Contains(h.Arithmetic[1], "Kafka before 4.4") {
		t.Fatalf("hazard %+v", h)
	}
	if h := shareHazard(t, shareYAML("{deadLetterTopic: orders.dlq}", "1s"), "share-archive-no-dlq"); h != nil {
		t.Errorf("a dead-letter topic is declared: %s", h.Summary)
	}
	// A plain consumer group is no share group: none of these checks.
	for _, c := range ShareChecks() {
		if h := shareHazard(t, shareHead+strings.Replace(shareApp, "%s", "75s", 1), c.ID); h != nil {
			t.Errorf("%s on a consumer group: %s", c.ID, h.Summary)
		}
	}
}

// TestShareRefusals: settings Kafka refuses, or share groups elsewhere.
func TestShareRefusals(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{shareYAML("{deliveryCountLimit: 11}", "1s"), "kafkaShare.deliveryCountLimit: 11: Kafka takes a delivery count limit of 2 to 10"},
		{shareYAML("{retries: [5m, 1m]}", "1s"), "kafkaShare.retries[1]: retry times are after the first delivery and ascending"},
		{strings.Replace(shareYAML("{}", "1s"), "kind: kafka", "kind: redis", 1), "share groups are Kafka's (KIP-932), not redis"},
		{strings.Replace(shareYAML("{}", "1s"), "            kafkaShare: {}\n", "            kafkaShare: {}\n            maxDeliver: 3\n", 1), "leave ackWait and maxDeliver out"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestShareExample: the example profile names every share-group hazard.
func TestShareExample(t *testing.T) {
	p, err := Load("../../examples/profiles/kafka-share-hazards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range Hazards(p) {
		seen[h.Check] = true
	}
	for _, c := range ShareChecks() {
		if !seen[c.ID] {
			t.Errorf("the example names no %s hazard", c.ID)
		}
	}
}
