package profile

import (
	"math"
	"strings"
	"testing"
	"time"
)

// stream and consumer blocks the cases below put together: one NATS broker
// b with stream S (window 5m) and broker consumer c.
func pipe(stream, bconsumer, rest string) string {
	if stream == "" {
		stream = "duplicates: 5m\n        retention: workqueue"
	}
	if bconsumer == "" {
		bconsumer = "maxDeliver: 3"
	}
	return head + `brokers:
  - name: b
    kind: nats
    streams:
      - name: S
        ` + stream + `
        consumers:
          - name: c
            ` + bconsumer + "\n" + rest
}

func producer(fields string) string {
	return pipe("", "", "producers:\n  - name: p\n    broker: b\n    stream: S\n    "+strings.ReplaceAll(fields, "\n", "\n    ")+"\n")
}

// consumer builds an application consumer on b/S/c.
func consumer(stream, bconsumer, fields string) string {
	return pipe(stream, bconsumer, "consumers:\n  - name: w\n    broker: b\n    stream: S\n    brokerConsumer: c\n    "+strings.ReplaceAll(fields, "\n", "\n    ")+"\n")
}

const (
	notify  = "scopes: [{name: Notify, effect: not-idempotent}]"
	index   = "scopes: [{name: SearchIndex, effect: versioned-upsert}]"
	two     = "scopes: [{name: SearchIndex, effect: versioned-upsert}, {name: Notify, effect: not-idempotent}]"
	ackLast = "ackOrder: effect-then-ack"
	good    = "dedupe: {key: [messageId, version, scope], lifetime: 0s, store: durable}"
)

// TestChecks: each check, the smallest profile that triggers it, and ones
// next to it that do not.
func TestChecks(t *testing.T) {
	cases := []struct {
		check   string
		trigger string
		not     []string
	}{
		{"request-id-unscoped",
			head + "eventStore: {name: e, requestIdScope: none, retryReusesRequestId: true}\n",
			[]string{head + "eventStore: {name: e, requestIdScope: aggregate, retryReusesRequestId: true}\n"}},
		{"request-id-global",
			head + "eventStore: {name: e, requestIdScope: global, retryReusesRequestId: true}\n",
			[]string{head + "eventStore: {name: e, requestIdScope: aggregate, retryReusesRequestId: true}\n"}},
		{"fresh-request-id",
			head + "eventStore: {name: e, requestIdScope: aggregate}\n",
			[]string{head + "eventStore: {name: e, requestIdScope: aggregate, retryReusesRequestId: true}\n"}},
		{"fresh-id-on-retry",
			producer("keepsMessageId: false\nretries: [1s]"),
			[]string{producer("keepsMessageId: false"), producer("keepsMessageId: true\nretries: [1s]")}},
		{"retry-past-window",
			producer("keepsMessageId: true\nretries: [4m, 6m]"),
			[]string{producer("keepsMessageId: true\nretries: [4m]"), producer("keepsMessageId: true\nretries: [4m59s]")}},
		{"window-not-refreshed",
			producer("keepsMessageId: true\nretries: [4m, 6m]\nassumesRefreshOnHit: true"),
			[]string{
				producer("keepsMessageId: true\nretries: [4m, 6m]"),
				producer("keepsMessageId: true\nretries: [4m]\nassumesRefreshOnHit: true"),
				producer("keepsMessageId: true\nretries: [6m]\nassumesRefreshOnHit: true"), // past it even with a refresh
				pipe("duplicates: 5m\n        duplicatesRefreshOnHit: true", "", "producers:\n  - {name: p, broker: b, stream: S, keepsMessageId: true, retries: [4m, 6m], assumesRefreshOnHit: true}\n"),
			}},
		{"no-outbox",
			producer("keepsMessageId: true\nafterCommit: true"),
			[]string{producer("keepsMessageId: true\nafterCommit: true\noutbox: true"), producer("keepsMessageId: true")}},
		{"no-dedupe",
			consumer("", "", notify+"\n"+ackLast),
			[]string{consumer("", "", index+"\n"+ackLast), consumer("", "", notify+"\n"+ackLast+"\n"+good)}},
		{"key-without-version",
			consumer("", "", index+"\n"+ackLast+"\ndedupe: {key: [messageId], lifetime: 0s, store: durable}"),
			[]string{consumer("", "", index+"\n"+ackLast+"\ndedupe: {key: [messageId, version], lifetime: 0s, store: durable}"),
				consumer("", "", index+"\n"+ackLast+"\ndedupe: {key: [eventId], lifetime: 0s, store: durable}")}},
		{"one-flag-across-scopes",
			consumer("", "", two+"\n"+ackLast+"\ndedupe: {key: [eventId], lifetime: 0s, store: durable}"),
			[]string{consumer("", "", two+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 0s, store: durable}"),
				consumer("", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId], lifetime: 0s, store: durable}")}},
		{"unconditional-upsert",
			consumer("", "", "scopes: [{name: SearchIndex, effect: upsert}]\n"+ackLast+"\n"+good),
			[]string{consumer("", "", index+"\n"+ackLast+"\n"+good)}},
		{"record-in-memory",
			consumer("", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 0s, store: memory}"),
			[]string{consumer("", "", notify+"\n"+ackLast+"\n"+good),
				consumer("", "", index+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 0s, store: memory}")}},
		{"ack-before-effect",
			consumer("", "", index+"\nackOrder: ack-then-effect"),
			[]string{consumer("", "", index+"\n"+ackLast), consumer("", "", index+"\nackOrder: ack-then-effect\nreconciliation: true")}},
		{"ack-before-effect", // the broker acks on delivery, whatever the code's order
			consumer("", "ackPolicy: none", index+"\n"+ackLast),
			[]string{consumer("", "ackPolicy: explicit", index+"\n"+ackLast)}},
		{"record-shorter-than-redelivery", // the seed's 10 vs 11 minutes
			consumer("", "backoff: [1m, 10m]\n            maxDeliver: 3", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"),
			[]string{consumer("", "backoff: [1m, 10m]\n            maxDeliver: 3", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 12m, store: durable}"),
				consumer("", "backoff: [1m, 10m]\n            maxDeliver: 3", index+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"),
				consumer("", "backoff: [1m, 10m]\n            maxDeliver: 3", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 0s, store: durable}")}},
		{"record-shorter-than-redelivery", // unbounded redeliveries
			consumer("", "maxDeliver: -1", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 24h, store: durable}"),
			[]string{consumer("", "maxDeliver: 1", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 1s, store: durable}")}},
		{"record-shorter-than-replay",
			consumer("retention: limits\n        maxAge: 11m", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"),
			[]string{consumer("retention: limits\n        maxAge: 9m", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"),
				consumer("retention: workqueue", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"),
				consumer("retention: limits", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}\nmaxReplayAge: 0s"),
				consumer("retention: limits", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 10m, store: durable}\nmaxReplayAge: 5m")}},
		{"redelivery-after-expiry",
			consumer("duplicates: 2m\n        maxAge: 5m", "backoff: [1m, 10m]\n            maxDeliver: 3", notify+"\n"+ackLast),
			[]string{consumer("duplicates: 2m\n        maxAge: 12m", "backoff: [1m, 10m]\n            maxDeliver: 3", notify+"\n"+ackLast)}},
		{"claim-after-trim",
			strings.Replace(consumer("maxAge: 10m", "ackWait: 15m", notify+"\n"+ackLast), "kind: nats", "kind: redis", 1),
			[]string{strings.Replace(consumer("maxAge: 10m", "ackWait: 5m", notify+"\n"+ackLast), "kind: nats", "kind: redis", 1)}},
		{"max-deliver-one",
			consumer("", "maxDeliver: 1", notify+"\n"+ackLast),
			[]string{consumer("", "maxDeliver: 2", notify+"\n"+ackLast), consumer("", "maxDeliver: 1\n            ackPolicy: none", notify+"\n"+ackLast)}},
		{"record-shorter-than-replay", // no maxAge: a replay reaches everything
			consumer("retention: limits", "", notify+"\n"+ackLast+"\ndedupe: {key: [eventId, scope], lifetime: 720h, store: durable}"),
			nil},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[c.check] = true
		t.Run(c.check, func(t *testing.T) {
			if h := find(t, c.trigger, c.check); h == nil {
				t.Errorf("no %s hazard in\n%s", c.check, c.trigger)
			} else if h.Rule != checkByID(c.check).Rule || len(h.Arithmetic) == 0 || len(h.Timeline) == 0 || h.Line == 0 {
				t.Errorf("incomplete hazard %+v", h)
			}
			for _, n := range c.not {
				if h := find(t, n, c.check); h != nil {
					t.Errorf("unexpected %s hazard (%s) in\n%s", c.check, h.Summary, n)
				}
			}
		})
	}
	for _, c := range Checks {
		if !tested[c.ID] {
			t.Errorf("check %s has no test case", c.ID)
		}
	}
}

func find(t *testing.T, yaml, check string) *Hazard {
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

// TestSeed is the done-when on the seed's own scenario.
func TestSeed(t *testing.T) {
	p, err := Load("../../examples/profiles/seed-07-07.yaml")
	if err != nil {
		t.Fatal(err)
	}
	byCheck := map[string]Hazard{}
	for _, h := range Hazards(p) {
		byCheck[h.Check] = h
	}
	win := byCheck["retry-past-window"]
	if !strings.Contains(win.Summary, "6m0s") || strings.Contains(win.Summary, "4m0s") {
		t.Errorf("the window hazard must name the 6-minute retry and not the 4-minute one: %q", win.Summary)
	}
	if !contains(win.Arithmetic, "retry at 6m0s >= window 5m0s: the broker no longer de-dupes it") ||
		!contains(win.Arithmetic, "retry at 4m0s < window 5m0s: de-duped (not a hazard)") {
		t.Errorf("arithmetic %q", win.Arithmetic)
	}
	red := byCheck["record-shorter-than-redelivery"]
	if !strings.Contains(red.Arithmetic[0], "redelivery at 11m0s >= record lifetime 10m0s") {
		t.Errorf("arithmetic %q", red.Arithmetic)
	}
	for _, c := range []string{"key-without-version", "one-flag-across-scopes", "unconditional-upsert", "no-outbox", "record-shorter-than-replay"} {
		if _, ok := byCheck[c]; !ok {
			t.Errorf("the seed's %s point is missing", c)
		}
	}
	hf, err := Load("../../examples/profiles/hazard-free.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if hs := Hazards(hf); len(hs) > 0 {
		t.Errorf("hazard-free has %d hazards, first: %s", len(hs), hs[0].Summary)
	}
}

// TestRedeliveries: the waits add up as the NATS server computes them.
func TestRedeliveries(t *testing.T) {
	m, s := time.Minute, time.Second
	cases := []struct {
		c         BrokerConsumer
		want      []time.Duration
		unlimited bool
	}{
		{BrokerConsumer{MaxDeliver: 3}, []time.Duration{30 * s, 60 * s}, false}, // the NATS default ack wait
		// Equal waits are one product: the first redelivery and the last.
		{BrokerConsumer{AckWait: Duration(20 * s), MaxDeliver: 4}, []time.Duration{20 * s, 60 * s}, false},
		{BrokerConsumer{AckWait: Duration(s), MaxDeliver: math.MaxInt32}, []time.Duration{s, (math.MaxInt32 - 1) * s}, false},
		// Saturated, never negative.
		{BrokerConsumer{Backoff: []Duration{Duration(1000000 * time.Hour)}, MaxDeliver: 4}, []time.Duration{1000000 * time.Hour, math.MaxInt64}, false},
		{BrokerConsumer{Backoff: []Duration{Duration(2562047 * time.Hour), Duration(2562047 * time.Hour)}, MaxDeliver: 3}, []time.Duration{2562047 * time.Hour, math.MaxInt64}, false},
		{BrokerConsumer{Backoff: []Duration{Duration(m), Duration(10 * m)}, MaxDeliver: 3}, []time.Duration{m, 11 * m}, false},
		// The last back-off repeats until maxDeliver.
		{BrokerConsumer{Backoff: []Duration{Duration(30 * s), Duration(m), Duration(5 * m)}, MaxDeliver: 5}, []time.Duration{30 * s, 90 * s, 390 * s, 690 * s}, false},
		{BrokerConsumer{MaxDeliver: 1}, nil, false},
		{BrokerConsumer{MaxDeliver: 0}, nil, true},
		{BrokerConsumer{MaxDeliver: -1}, nil, true},
		{BrokerConsumer{MaxDeliver: 5, AckPolicy: AckNone}, nil, false},
	}
	b := &Broker{Kind: KindNATS}
	for _, c := range cases {
		r := redeliveries(b, &Stream{}, &c.c)
		if r.Unlimited != c.unlimited || len(r.At) != len(c.want) {
			t.Errorf("%+v: got %v (unlimited %t), want %v", c.c, r.At, r.Unlimited, c.want)
			continue
		}
		for i := range c.want {
			if r.At[i] != c.want[i] {
				t.Errorf("%+v: got %v, want %v", c.c, r.At, c.want)
			}
		}
	}
}

// TestAcks: the table follows the declaration, layer by layer.
func TestAcks(t *testing.T) {
	p, err := Load("../../examples/profiles/seed-07-07.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rows := Acks(p)
	var layers []string
	for _, r := range rows {
		layers = append(layers, r.Layer)
		if r.Ack == "" || r.Proves == "" || len(r.DoesNotProve) == 0 {
			t.Errorf("incomplete row %+v", r)
		}
	}
	want := []string{"HTTP API", "event store s3-db", "publish S3 -> nats main/EVENTS", "consumer W (nats main/EVENTS, search-notify)", "de-dupe record of W (durable)", "device / end user"}
	if strings.Join(layers, "|") != strings.Join(want, "|") {
		t.Errorf("layers %q, want %q", layers, want)
	}
	text := ""
	for _, r := range rows {
		text += strings.Join(r.DoesNotProve, " ") + " "
	}
	for _, s := range []string{"a v2 finds v1's record", "one record stands for SearchIndex and Notify", "anything older than 10m0s", "with no outbox", "not a read receipt"} {
		if !strings.Contains(text, s) {
			t.Errorf("the table does not say %q", s)
		}
	}
}
