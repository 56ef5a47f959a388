package profile

import (
	"strings"
	"testing"
	"time"
)

// The expectations below were computed by hand from the NATS server's
// source (v2.15.2, server/stream.go checkStreamCfg: an unset duplicates
// window is min(2m, maxAge); a window longer than maxAge, a window or
// maxAge under 100ms, and more than 5 replicas are refused) and the Redis
// semantics (an entry trimmed by MINID/MAXLEN before a claim is gone from
// the stream: XAUTOCLAIM drops it from the pending list), before the code.

// natsPipe is one NATS stream S with broker consumer c, then rest.
func natsPipe(kind, stream, bconsumer, rest string) string {
	return head + "brokers:\n  - name: b\n    kind: " + kind + "\n    streams:\n      - {name: S" + stream + ", consumers: [{name: c" + bconsumer + "}]}\n" + rest
}

// retry is a producer on b/S keeping its id with the given retries.
func retry(retries string) string {
	return "producers:\n  - {name: p, broker: b, stream: S, keepsMessageId: true, retries: [" + retries + "]}\n"
}

// worker is an application consumer on b/S/c with a not-idempotent Notify.
func worker(extra string) string {
	return "consumers:\n  - {name: w, broker: b, stream: S, brokerConsumer: c, scopes: [{name: Notify, effect: not-idempotent}], ackOrder: effect-then-ack" + extra + "}\n"
}

const record10m = ", dedupe: {key: [eventId, scope], lifetime: 10m, store: durable}"

// TestHandComputed: each profile's hazards, check by check, with the steps
// of the arithmetic each must show; and the checks it must not raise.
func TestHandComputed(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want map[string][]string // check -> arithmetic lines (substrings), each must appear
		not  []string
	}{
		// The effective window: an unset window is min(2m, maxAge).
		{"unset window, maxAge 1m: the 90 s retry is past it",
			natsPipe("nats", ", maxAge: 1m", "", retry("30s, 90s")),
			map[string][]string{"retry-past-window": {
				"duplicates not set: NATS takes min(2m0s default, maxAge 1m0s) = 1m0s",
				"retry at 1m30s >= window 1m0s",
				"retry at 30s < window 1m0s: de-duped"}},
			nil},
		{"unset window, maxAge 1m: a retry at 59s is inside it",
			natsPipe("nats", ", maxAge: 1m", "", retry("59s")), nil, []string{"retry-past-window"}},
		{"unset window, maxAge exactly 2m: the default and maxAge agree",
			natsPipe("nats", ", maxAge: 2m", "", retry("1m59s, 2m")),
			map[string][]string{"retry-past-window": {"min(2m0s default, maxAge 2m0s) = 2m0s", "retry at 2m0s >= window 2m0s", "retry at 1m59s < window 2m0s"}},
			nil},
		{"unset window, maxAge 5m: the 2m default",
			natsPipe("nats", ", maxAge: 5m", "", retry("90s")), nil, []string{"retry-past-window"}},
		{"exactly at the declared window",
			natsPipe("nats", ", duplicates: 1m", "", retry("1m")),
			map[string][]string{"retry-past-window": {"retry at 1m0s >= window 1m0s"}}, nil},

		// Redeliveries bounded by retention: past maxAge a redelivery is a
		// loss, not a duplicate.
		{"the seed's 11-minute redelivery on a 5-minute stream: a loss, no duplicate",
			natsPipe("nats", ", duplicates: 2m, maxAge: 5m", ", backoff: [1m, 10m], maxDeliver: 3", worker(record10m)),
			map[string][]string{"redelivery-after-expiry": {
				"backoff 1m0s + 10m0s = 11m0s, maxDeliver 3: 2 redeliveries",
				"delivery 2 at 1m0s < maxAge 5m0s: still stored",
				"delivery 3 at 11m0s >= maxAge 5m0s: the message expired at 5m0s, nothing is redelivered"}},
			[]string{"record-shorter-than-redelivery", "record-shorter-than-replay"}},
		{"exactly at expiry: the redelivery at 2m on a 2m stream is lost",
			natsPipe("nats", ", maxAge: 2m", ", ackWait: 1m, maxDeliver: 3", worker("")),
			map[string][]string{"redelivery-after-expiry": {"delivery 3 at 2m0s >= maxAge 2m0s"}}, nil},
		{"a second past the last redelivery: nothing lost",
			natsPipe("nats", ", maxAge: 2m1s", ", ackWait: 1m, maxDeliver: 3", worker("")),
			nil, []string{"redelivery-after-expiry"}},
		{"the back-off's last step repeating, cut by maxAge 12m",
			// 30s, 30s+1m = 1m30s, +5m = 6m30s, +5m = 11m30s, +5m = 16m30s
			natsPipe("nats", ", maxAge: 12m", ", backoff: [30s, 1m, 5m], maxDeliver: 6", worker(", dedupe: {key: [eventId, scope], lifetime: 11m30s, store: durable}, maxReplayAge: 1m")),
			map[string][]string{
				"redelivery-after-expiry": {
					"backoff 30s + 1m0s + 5m0s + 2 x 5m0s = 16m30s, maxDeliver 6: 5 redeliveries",
					"the last back-off step 5m0s repeats from 6m30s: redeliveries at 11m30s, 16m30s",
					"delivery 5 at 11m30s < maxAge 12m0s: still stored",
					"delivery 6 at 16m30s >= maxAge 12m0s: the message expired at 12m0s, nothing is redelivered"},
				"record-shorter-than-redelivery": {"redelivery at 11m30s >= record lifetime 11m30s",
					"redeliveries at or after maxAge 12m0s are not counted: the message is gone (a loss, not a duplicate)"}},
			nil},
		{"the repeating step: a record one second longer than the last stored redelivery",
			natsPipe("nats", ", maxAge: 12m", ", backoff: [30s, 1m, 5m], maxDeliver: 6", worker(", dedupe: {key: [eventId, scope], lifetime: 11m31s, store: durable}, maxReplayAge: 1m")),
			map[string][]string{"redelivery-after-expiry": {"delivery 6 at 16m30s >= maxAge 12m0s"}},
			[]string{"record-shorter-than-redelivery"}},
		{"unlimited redeliveries on a stream with maxAge: the record outliving maxAge is enough",
			natsPipe("nats", ", maxAge: 10m", ", ackWait: 30s, maxDeliver: -1", worker(", dedupe: {key: [eventId, scope], lifetime: 10m1s, store: durable}")),
			nil, []string{"record-shorter-than-redelivery", "redelivery-after-expiry", "record-shorter-than-replay"}},
		{"unlimited redeliveries on a stream with maxAge: the last one before expiry",
			// every 30s while stored: the last before 10m is at 9m30s
			natsPipe("nats", ", maxAge: 10m", ", ackWait: 30s, maxDeliver: -1", worker(", dedupe: {key: [eventId, scope], lifetime: 9m30s, store: durable}")),
			map[string][]string{"record-shorter-than-redelivery": {"redelivery at 9m30s >= record lifetime 9m30s",
				"every 30s while the message is stored: the last before maxAge 10m0s is at 9m30s"}},
			[]string{"redelivery-after-expiry"}},
		{"Redis: a claim after 15 min on a stream trimmed at 10 min",
			natsPipe("redis", ", maxAge: 10m", ", ackWait: 15m", worker(record10m)),
			map[string][]string{"claim-after-trim": {
				"the first claim after min-idle 15m0s comes at 15m0s >= the trim at 10m0s (maxAge): the entry is gone before any member can claim it"}},
			[]string{"record-shorter-than-redelivery", "redelivery-after-expiry"}},
		{"Redis: a claim after 5 min on a stream trimmed at 10 min",
			natsPipe("redis", ", maxAge: 10m", ", ackWait: 5m", worker(", dedupe: {key: [eventId, scope], lifetime: 0s, store: durable}")),
			nil, []string{"claim-after-trim"}},

		// maxDeliver 1: a delivery that fails is never delivered again.
		{"maxDeliver 1 with an effect that can fail",
			natsPipe("nats", ", duplicates: 2m", ", maxDeliver: 1", worker("")),
			map[string][]string{"max-deliver-one": {"maxDeliver 1: one delivery and no redelivery"}},
			[]string{"record-shorter-than-redelivery"}},
		{"maxDeliver 2: one redelivery",
			natsPipe("nats", ", duplicates: 2m", ", maxDeliver: 2", worker("")), nil, []string{"max-deliver-one"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("t.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatalf("%v\n%s", err, c.yaml)
			}
			got := map[string]Hazard{}
			for _, h := range Hazards(p) {
				got[h.Check] = h
			}
			for check, lines := range c.want {
				h, ok := got[check]
				if !ok {
					t.Errorf("no %s hazard; got %v\n%s", check, keys(got), c.yaml)
					continue
				}
				if h.Line == 0 || len(h.Timeline) == 0 || h.Rule != checkByID(check).Rule {
					t.Errorf("%s: incomplete hazard %+v", check, h)
				}
				all := strings.Join(h.Arithmetic, "\n")
				for _, l := range lines {
					if !strings.Contains(all, l) {
						t.Errorf("%s: arithmetic lacks %q:\n%s", check, l, all)
					}
				}
			}
			for _, check := range c.not {
				if h, ok := got[check]; ok {
					t.Errorf("unexpected %s hazard: %s\n%s", check, h.Summary, strings.Join(h.Arithmetic, "\n"))
				}
			}
		})
	}
}

func keys(m map[string]Hazard) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRefusedLikeTheBroker: what the NATS server refuses is refused at load,
// at its line, with the server's bound; the bounds themselves load.
func TestRefusedLikeTheBroker(t *testing.T) {
	stream := func(fields string) string {
		return head + "brokers:\n  - name: b\n    kind: nats\n    streams:\n      - name: S\n" + fields
	}
	cases := []struct {
		yaml  string
		line  int
		field string
		msg   []string
	}{
		{stream("        maxAge: 1m\n        duplicates: 2m\n"), 9, "brokers[0].streams[0].duplicates",
			[]string{"duplicates window 2m0s is longer than maxAge 1m0s", "NATS refuses a duplicates window larger than max age"}},
		{stream("        duplicates: 50ms\n"), 8, "brokers[0].streams[0].duplicates",
			[]string{"50ms is under 100ms", "NATS refuses a duplicates window under 100ms"}},
		{stream("        maxAge: 50ms\n"), 8, "brokers[0].streams[0].maxAge",
			[]string{"50ms is under 100ms", "NATS refuses a max age under 100ms"}},
		{stream("        replicas: 7\n"), 8, "brokers[0].streams[0].replicas",
			[]string{"7 is above 5"}},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(c.yaml))
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("want a malformed profile, got %v\n%s", err, c.yaml)
			continue
		}
		if e.Line != c.line || e.Field != c.field {
			t.Errorf("refused at %d %s, want %d %s: %v", e.Line, e.Field, c.line, c.field, err)
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%q lacks %q", err, m)
			}
		}
		if !strings.HasPrefix(err.Error(), "p.yaml:") {
			t.Errorf("%q does not start with file:line", err)
		}
	}
	for _, ok := range []string{
		stream("        maxAge: 1m\n        duplicates: 1m\n"), // equal: accepted
		stream("        duplicates: 100ms\n"),
		stream("        maxAge: 100ms\n"),
		stream("        replicas: 5\n"),
		stream("        maxAge: 1m\n"), // the window becomes 1m, not refused
	} {
		if _, err := Parse("p.yaml", []byte(ok)); err != nil {
			t.Errorf("refused a setting NATS accepts: %v\n%s", err, ok)
		}
	}
}

// TestEffectiveDuplicates: the window the server really uses.
func TestEffectiveDuplicates(t *testing.T) {
	cases := []struct{ declared, maxAge, want string }{
		{"0s", "0s", "2m0s"},
		{"0s", "1m", "1m0s"},
		{"0s", "2m", "2m0s"},
		{"0s", "168h", "2m0s"},
		{"30s", "1m", "30s"},
		{"5m", "0s", "5m0s"},
	}
	for _, c := range cases {
		d, m := mustDur(t, c.declared), mustDur(t, c.maxAge)
		if got := NATSDuplicates(d, m); got.String() != c.want {
			t.Errorf("declared %s, maxAge %s: %s, want %s", c.declared, c.maxAge, got, c.want)
		}
	}
}

func mustDur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLossPointsAtSetting: a loss hazard names the setting it comes from.
func TestLossPointsAtSetting(t *testing.T) {
	for yaml, want := range map[string]string{
		natsPipe("nats", ", maxAge: 5m", ", backoff: [1m, 10m], maxDeliver: 3", worker("")): "brokers[0].streams[0].maxAge",
		natsPipe("nats", "", ", maxDeliver: 1", worker("")):                                 "brokers[0].streams[0].consumers[0].maxDeliver",
	} {
		p, err := Parse("t.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		hs := Hazards(p)
		if len(hs) == 0 || hs[len(hs)-1].Field != want || hs[len(hs)-1].Line != 7 {
			t.Errorf("want the last hazard at %s, line 7: %+v", want, hs)
		}
	}
}

// TestAckRowCutByAge: the acknowledgement table says where maxAge stops the
// redeliveries an ack spares.
func TestAckRowCutByAge(t *testing.T) {
	p, err := Parse("t.yaml", []byte(natsPipe("nats", ", duplicates: 2m, maxAge: 5m", ", backoff: [1m, 10m], maxDeliver: 3", worker(""))))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Acks(p) {
		if strings.HasPrefix(r.Layer, "consumer w") {
			if !strings.Contains(r.Proves, "cut by maxAge 5m0s: the last while the message is kept at 1m0s") {
				t.Errorf("ack row: %q", r.Proves)
			}
			return
		}
	}
	t.Error("no consumer row")
}

// TestHugeScheduleIsQuick: the largest maxDeliver on a long-lived stream is
// computed, not walked.
func TestHugeScheduleIsQuick(t *testing.T) {
	yaml := natsPipe("nats", ", maxAge: 1000000h", ", ackWait: 1s, maxDeliver: 2147483647", worker(", dedupe: {key: [eventId, scope], lifetime: 1h, store: durable}"))
	start := time.Now()
	h := find(t, yaml, "record-shorter-than-redelivery")
	if h == nil {
		t.Fatal("no record-shorter-than-redelivery hazard")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
	if !strings.Contains(h.Arithmetic[0], "redelivery at 596523h14m6s >= record lifetime 1h0m0s") {
		t.Errorf("arithmetic %q", h.Arithmetic)
	}
}
