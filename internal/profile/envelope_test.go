package profile

import (
	"strings"
	"testing"
)

const envConsumer = `consumers:
  - name: w
    broker: b
    stream: S
    brokerConsumer: c
    scopes: [{name: SearchIndex, effect: versioned-upsert}]
    ackOrder: effect-then-ack
    envelope:
`

// TestEnvelope: a mapped envelope loads; a bad location or two fields on
// one place is one line naming the file, the line and the field.
func TestEnvelope(t *testing.T) {
	p, err := Parse("p.yaml", []byte(head+natsBroker+envConsumer+
		"      messageId: meta.id\n      version: meta.rev\n      eventId: header:Event-Id\n      body: data\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Consumers[0].Envelope
	if e == nil || e.MessageID != "meta.id" || e.Version != "meta.rev" || e.EventID != "header:Event-Id" || e.Body != "data" {
		t.Fatalf("envelope %+v", e)
	}
	// Line 19 is envelope:, 20 its first field.
	cases := []struct{ name, fields, want string }{
		{"empty segment", "      messageId: meta..id\n      version: rev\n",
			`p.yaml:20: consumers[0].envelope.messageId: "meta..id": key 2 of the path is empty`},
		{"leading dot", "      messageId: .id\n      version: rev\n",
			`p.yaml:20: consumers[0].envelope.messageId: ".id": key 1 of the path is empty`},
		{"bad character", "      messageId: id\n      version: \"meta[0]\"\n",
			`p.yaml:21: consumers[0].envelope.version: "meta[0]": key "meta[0]" has '['`},
		{"duplicate target", "      messageId: meta.id\n      version: meta.rev\n      body: meta.id\n",
			`p.yaml:22: consumers[0].envelope.body: "meta.id" and messageId's "meta.id" are one place in the event`},
		{"path inside another", "      messageId: meta\n      version: meta.rev\n",
			`p.yaml:21: consumers[0].envelope.version: "meta.rev" and messageId's "meta" are one place in the event`},
		{"same header in another case", "      messageId: header:Msg\n      version: header:msg\n",
			`p.yaml:21: consumers[0].envelope.version: "header:msg" and messageId's "header:Msg" are one place`},
		{"empty header", "      messageId: \"header:\"\n      version: rev\n",
			`p.yaml:20: consumers[0].envelope.messageId: "header:": an empty header name`},
		{"kit's header", "      messageId: header:Nats-Msg-Id\n      version: rev\n",
			`p.yaml:20: consumers[0].envelope.messageId: "header:Nats-Msg-Id": the kit sets Nats-Msg-Id itself`},
		{"version required", "      messageId: id\n",
			`p.yaml:20: consumers[0].envelope.version: required field missing`},
		{"empty value", "      messageId: \"\"\n      version: rev\n",
			`p.yaml:20: consumers[0].envelope.messageId:`},
		{"unknown field", "      messageId: id\n      version: rev\n      headers: {a: b}\n",
			`p.yaml:22: consumers[0].envelope.headers: unknown field`},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(head+natsBroker+envConsumer+c.fields))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v\nwant %s...", c.name, err, c.want)
		}
		if err != nil && !IsMalformed(err) {
			t.Errorf("%s: not a malformed-profile error: %v", c.name, err)
		}
	}
}

func TestParseLocation(t *testing.T) {
	for s, want := range map[string]string{"a": "a", "a.b-c.d_e": "a.b-c.d_e", "header:X-Id": "header:X-Id"} {
		l, err := ParseLocation(s)
		if err != nil || l.String() != want {
			t.Errorf("%q: %v %v", s, l, err)
		}
	}
	if l, _ := ParseLocation("meta.id"); len(l.Path) != 2 || l.Header != "" {
		t.Errorf("meta.id: %+v", l)
	}
	for _, s := range []string{"", "a.", "a b", "header:a.b", "header:onceproof-event-id", "header:nats-expected-stream"} {
		if _, err := ParseLocation(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}
