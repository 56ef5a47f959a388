package profile

import (
	"strings"
	"testing"
)

// TestRabbitPlanExample is issue 38's first Done-when line for plan: the
// RabbitMQ example names each RabbitMQ hazard, with its arithmetic, at the
// line of its field.
func TestRabbitPlanExample(t *testing.T) {
	p, err := Load("../../examples/profiles/rabbitmq-hazards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Hazard{}
	for _, h := range Hazards(p) {
		got[h.Check] = h
	}
	want := map[string][]string{
		"rabbitmq-delivery-limit-drops": {"20, the default from RabbitMQ 4.0 (version 4.0.5)", "1 delivery + 20 redeliveries = 21 deliveries", "no x-dead-letter-exchange"},
		"rabbitmq-consumer-timeout":     {"processingTime 10m0s (consumers[0].processingTime) > consumer_timeout 5m0s", "prefetch 50: up to 50 unacked deliveries", "after 21 deliveries"},
		"rabbitmq-auto-ack":             {"no-ack true"},
		"rabbitmq-no-confirms":          {"confirms false"},
		"rabbitmq-no-mandatory":         {"mandatory false"},
		"rabbitmq-ttl-backlog":          {"200 msg/s published for 1m0s", "40.0 msg/s consumed", "9599 messages", "= 4m0s > x-message-ttl 2s"},
		"rabbitmq-maxlen-backlog":       {"9599 - x-max-length 1000 = 8599 messages dropped"},
		"rabbitmq-stream-writers":       {`the last one stored for "ledger"`},
	}
	for _, c := range RabbitChecks() {
		if _, ok := want[c.ID]; !ok {
			t.Errorf("check %s is not in the example's test", c.ID)
		}
	}
	for id, parts := range want {
		h, ok := got[id]
		if !ok {
			t.Errorf("no %s hazard", id)
			continue
		}
		arith := strings.Join(h.Arithmetic, "\n")
		for _, s := range parts {
			if !strings.Contains(arith, s) {
				t.Errorf("%s arithmetic lacks %q:\n%s", id, s, arith)
			}
		}
		if h.Rule != checkByID(id).Rule || h.Line == 0 || len(h.Timeline) == 0 {
			t.Errorf("incomplete hazard %+v", h)
		}
	}
}

const rabbitHead = `schema: onceproof.profile/v1
name: t
producers:
  - name: api
    broker: r
    stream: q
    keepsMessageId: true
    rabbitmq: {confirms: true, mandatory: true}
brokers:
  - name: r
    kind: rabbitmq
`

const rabbitWorker = `consumers:
  - name: app
    broker: r
    stream: q
    brokerConsumer: c
    processingTime: 40m
    scopes: [{name: Index, effect: versioned-upsert}]
    ackOrder: effect-then-ack
`

// TestRabbitDefaults: an undeclared setting is its documented default,
// by version where the default changed.
func TestRabbitDefaults(t *testing.T) {
	quorum := "    streams:\n      - name: q\n        rabbitmq: {type: quorum}\n"
	for _, c := range []struct {
		name, yaml, check string
		want              bool
	}{
		// x-delivery-limit: none before 4.0, 20 from 4.0.
		{"no version: before 4.0, no limit", rabbitHead + quorum, "rabbitmq-delivery-limit-drops", false},
		{"3.13: no limit", rabbitHead + "    rabbitmq: {version: 3.13.7}\n" + quorum, "rabbitmq-delivery-limit-drops", false},
		{"4.0: limit 20", rabbitHead + "    rabbitmq: {version: \"4.0\"}\n" + quorum, "rabbitmq-delivery-limit-drops", true},
		{"4.0 unlimited", rabbitHead + "    rabbitmq: {version: \"4.0\"}\n    streams:\n      - name: q\n        rabbitmq: {type: quorum, deliveryLimit: -1}\n", "rabbitmq-delivery-limit-drops", false},
		{"4.0 with a dead-letter exchange", rabbitHead + "    rabbitmq: {version: \"4.0\"}\n    streams:\n      - name: q\n        rabbitmq: {type: quorum, deadLetterExchange: dlx}\n", "rabbitmq-delivery-limit-drops", false},
		// consumer_timeout: 30 min.
		{"40m processing against the 30m default", rabbitHead + quorum + "        consumers: [{name: c}]\n" + rabbitWorker, "rabbitmq-consumer-timeout", true},
		{"40m processing against a declared 1h", rabbitHead + "    rabbitmq: {consumerTimeout: 1h}\n" + quorum + "        consumers: [{name: c}]\n" + rabbitWorker, "rabbitmq-consumer-timeout", false},
		// confirms and mandatory: false.
		{"confirms undeclared", strings.Replace(rabbitHead, "    rabbitmq: {confirms: true, mandatory: true}\n", "", 1) + quorum, "rabbitmq-no-confirms", true},
		{"mandatory undeclared", strings.Replace(rabbitHead, "    rabbitmq: {confirms: true, mandatory: true}\n", "    rabbitmq: {confirms: true}\n", 1) + quorum, "rabbitmq-no-mandatory", true},
		{"confirms declared", rabbitHead + quorum, "rabbitmq-no-confirms", false},
	} {
		if h := find(t, c.yaml, c.check); (h != nil) != c.want {
			t.Errorf("%s: %s hazard %v, want %v (%+v)", c.name, c.check, h != nil, c.want, h)
		}
	}
}

// TestRabbitRefusals: what RabbitMQ refuses, or another kind's setting,
// is one line naming the field.
func TestRabbitRefusals(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{rabbitHead + "    streams:\n      - name: q\n        rabbitmq: {deliveryLimit: 5}\n", "x-delivery-limit is a quorum queue's argument"},
		{rabbitHead + "    streams:\n      - name: q\n        consumers: [{name: c, ackWait: 30s}]\n", "NATS consumer settings"},
		{rabbitHead + "    rabbitmq: {version: latest}\n    streams: [{name: q}]\n", "write the server's version"},
		{rabbitHead + "    streams:\n      - name: q\n        rabbitmq: {type: quorum, overflow: drop-head}\n", "overflow applies at maxLength"},
		{strings.Replace(rabbitHead, "kind: rabbitmq", "kind: nats", 1) + "    streams: [{name: q, rabbitmq: {type: quorum}}]\n", "a rabbitmq block on a nats stream"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("want one line with %q, got %v", c.want, err)
		}
	}
}
