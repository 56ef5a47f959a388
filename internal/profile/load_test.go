package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"unknown field", head + natsBroker + "    colour: red\n", "p.yaml:12: brokers[0].colour: unknown field (fields here: kind, name, streams)"},
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
