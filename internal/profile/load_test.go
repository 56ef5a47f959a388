package profile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const head = "schema: onceproof.profile/v1\nname: t\n"

const natsBroker = `brokers:
  - name: b
    kind: nats
    streams:
      - name: S
        duplicates: 5m
        consumers:
          - name: c
            maxDeliver: 3
`

// TestExamplesLoad: every example under examples/profiles is a valid profile.
func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../../examples/profiles/*.yaml")
	if len(files) < 2 {
		t.Fatalf("want at least the seed and the hazard-free examples, found %v", files)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestMalformed: one line naming the file, the line and the field.
func TestMalformed(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"yaml syntax", head + "producers: [\n", "p.yaml:3: (document): did not find expected node content"},
		{"not a mapping", "- a\n", "p.yaml:1: (document): want a mapping of fields"},
		{"empty", "", "p.yaml:1: (document): empty profile"},
		{"wrong schema", "schema: v0\nname: t\n", "p.yaml:1: schema: \"v0\" is not"},
		{"missing required", "name: t\n", "p.yaml:1: schema: required field missing"},
		{"unknown field", head + natsBroker + "    colour: red\n", "p.yaml:12: brokers[0].colour: unknown field (fields here: durability, kafka, kafkaShare, kind, name, nats, rabbitmq, redis, streams)"},
		{"twice", head + "name: u\n", "p.yaml:3: name: given twice"},
		{"bad enum", head + "brokers:\n  - name: b\n    kind: rabbit\n", `p.yaml:5: brokers[0].kind: "rabbit" is not one of nats, redis, kafka`},
		{"bare number duration", head + "brokers:\n  - name: b\n    kind: nats\n    streams:\n      - name: S\n        duplicates: 300\n",
			"p.yaml:8: brokers[0].streams[0].duplicates: want a duration with its unit such as 5m, 30s or 1h30m, got int \"300\""},
		{"bad duration", head + "brokers:\n  - name: b\n    kind: nats\n    streams:\n      - name: S\n        maxAge: 5 minutes\n",
			`p.yaml:8: brokers[0].streams[0].maxAge: want a duration`},
		{"not a list", head + natsBroker + "producers:\n  - name: p\n    broker: b\n    stream: S\n    keepsMessageId: true\n    retries: 4m\n",
			"p.yaml:17: producers[0].retries: want a list"},
		{"not a bool", head + natsBroker + "producers:\n  - name: p\n    broker: b\n    stream: S\n    keepsMessageId: yes please\n",
			"p.yaml:16: producers[0].keepsMessageId: want true or false"},
		{"required in a list item", head + natsBroker + "producers:\n  - name: p\n    broker: b\n    stream: S\n",
			"p.yaml:13: producers[0].keepsMessageId: required field missing"},
		{"unknown broker", head + natsBroker + "producers:\n  - name: p\n    broker: x\n    stream: S\n    keepsMessageId: true\n",
			`p.yaml:14: producers[0].broker: no broker named "x" under brokers`},
		{"unknown stream", head + natsBroker + "producers:\n  - name: p\n    broker: b\n    stream: T\n    keepsMessageId: true\n",
			`p.yaml:15: producers[0].stream: broker "b" has no stream named "T"`},
		{"retries not ascending", head + natsBroker + "producers:\n  - name: p\n    broker: b\n    stream: S\n    keepsMessageId: true\n    retries: [6m, 4m]\n",
			"p.yaml:17: producers[0].retries[1]: retry times"},
		{"backoff longer than maxDeliver", head + natsBroker + "            backoff: [1s, 2s, 3s, 4s]\n",
			"p.yaml:12: brokers[0].streams[0].consumers[0].backoff: 4 back-off entries but maxDeliver 3"},
		{"unknown broker consumer", head + natsBroker + "consumers:\n  - name: w\n    broker: b\n    stream: S\n    brokerConsumer: zz\n    scopes: [{name: I, effect: upsert}]\n    ackOrder: effect-then-ack\n",
			`p.yaml:16: consumers[0].brokerConsumer: stream b/S has no consumer named "zz"`},
		{"bad key part", head + natsBroker + "consumers:\n  - name: w\n    broker: b\n    stream: S\n    brokerConsumer: c\n    scopes: [{name: I, effect: upsert}]\n    ackOrder: effect-then-ack\n    dedupe: {key: [msgid], lifetime: 0s, store: durable}\n",
			`p.yaml:19: consumers[0].dedupe.key[0]: "msgid" is not one of messageId, version, eventId, scope`},
		{"null value", head + "description:\n", "p.yaml:3: description: empty value"},
		{"maxDeliver beyond a broker", head + strings.Replace(natsBroker, "maxDeliver: 3", "maxDeliver: 9223372036854775807", 1),
			"p.yaml:11: brokers[0].streams[0].consumers[0].maxDeliver: 9223372036854775807 is above 2147483647"},
		{"replicas beyond NATS", head + strings.Replace(natsBroker, "duplicates: 5m", "replicas: 6", 1),
			"p.yaml:8: brokers[0].streams[0].replicas: 6 is above 5"},
		{"second document", head + "---\nname: u\n", "p.yaml:3: (document): a second YAML document"},
		{"window on redis", head + "brokers:\n  - name: r\n    kind: redis\n    streams:\n      - name: S\n        duplicates: 1m\n",
			"p.yaml:8: brokers[0].streams[0].duplicates: a redis stream has no producer de-dupe window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", c.want)
			}
			if !IsMalformed(err) {
				t.Errorf("%v is not a *profile.Error", err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("got  %s\nwant one line containing %s", msg, c.want)
			}
		})
	}
}

// TestLoadMissingFile names the file.
func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") || !IsMalformed(err) {
		t.Errorf("got %v", err)
	}
}

// TestLines: every hazard points at a line of the profile that names its field.
func TestLines(t *testing.T) {
	p, err := Load("../../examples/profiles/seed-07-07.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile("../../examples/profiles/seed-07-07.yaml")
	lines := strings.Split(string(data), "\n")
	for _, h := range Hazards(p) {
		last := h.Field[strings.LastIndexAny(h.Field, ".")+1:]
		last, _, _ = strings.Cut(last, "[")
		if h.Line < 1 || !strings.Contains(lines[h.Line-1], last) {
			t.Errorf("%s: line %d does not name %s", h.Check, h.Line, h.Field)
		}
	}
}

// TestBounded: a profile whose aliases or counts are huge is refused or
// analysed at once, never expanded (issue 21: 461 MB after 25 s; 4.9 GB).
func TestBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(head + "description: &a0 x\n")
	for l := 1; l <= 3; l++ {
		fmt.Fprintf(&b, "x%d: &a%d [", l, l)
		for i := 0; i < 300; i++ {
			fmt.Fprintf(&b, "*a%d,", l-1)
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	_, err := Parse("p.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") || time.Since(start) > 2*time.Second {
		t.Errorf("alias bomb: %v after %s", err, time.Since(start))
	}
	consumer := "consumers:\n  - name: w\n    broker: b\n    stream: S\n    brokerConsumer: c\n    scopes: [{name: I, effect: not-idempotent}]\n    ackOrder: effect-then-ack\n    dedupe: {key: [messageId], lifetime: 10m, store: durable}\n"
	for _, c := range []struct{ name, decl, how string }{
		{"100000 deliveries", "maxDeliver: 100000\n            ackWait: 1h", "ackWait 1h0m0s + 99998 x 1h0m0s = 99999h0m0s, maxDeliver 100000: 99999 redeliveries"},
		{"saturated", "maxDeliver: 4\n            backoff: [1000000h]", "= more than 2562047h0m0s, maxDeliver 4: 3 redeliveries"},
		{"saturated pair", "maxDeliver: 3\n            backoff: [2562047h, 2562047h]", "= more than 2562047h0m0s, maxDeliver 3: 2 redeliveries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(head+strings.Replace(natsBroker, "maxDeliver: 3", c.decl, 1)+consumer))
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			pl := Analyze(p)
			pl.WriteText(&text)
			if !strings.Contains(text.String(), c.how) || strings.Contains(text.String(), "-2") {
				t.Errorf("the plan does not say %q (or shows a negative duration):\n%s", c.how, text.String())
			}
			found := false
			for _, h := range pl.Hazards {
				found = found || h.Check == "record-shorter-than-redelivery"
				if len(h.Timeline) > 10 {
					t.Errorf("%s: %d timeline marks", h.Check, len(h.Timeline))
				}
			}
			if !found || text.Len() > 20000 {
				t.Errorf("record-shorter-than-redelivery missing or the plan is %d bytes", text.Len())
			}
		})
	}
}
