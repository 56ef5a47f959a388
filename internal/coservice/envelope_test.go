package coservice

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/onceproof/tck/co"
)

// TestEnvelopeMessage: the zero envelope is co.Message byte for byte; a
// mapped one puts each field at its path or header, leaves out what it does
// not map, and keeps the broker id and the event id header.
func TestEnvelopeMessage(t *testing.T) {
	e := co.NewEvent("m-9@t", 2)
	m, err := Message(Envelope{}, e, "b-1")
	if err != nil || !reflect.DeepEqual(m, co.Message(e, "b-1")) {
		t.Fatalf("default envelope: %+v %v", m, err)
	}
	m, err = Message(Envelope{MessageID: "meta.id", Version: "meta.rev", Body: "data.text", EventID: "header:Event-Id"}, e, "b-1#replay-1")
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(m.Payload, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"meta": map[string]any{"id": "m-9@t", "rev": 2.0}, "data": map[string]any{"text": e.Body}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("payload %s, want %v", m.Payload, want)
	}
	if m.ID != "b-1#replay-1" || m.Headers["Event-Id"] != e.EventID || m.Headers[co.HeaderEventID] != e.EventID {
		t.Errorf("id %q headers %v", m.ID, m.Headers)
	}
	m, err = Message(Envelope{MessageID: "header:Msg", Version: "header:Rev"}, e, "b-1")
	if err != nil || m.Headers["Msg"] != "m-9@t" || m.Headers["Rev"] != "2" || string(m.Payload) != "{}" {
		t.Errorf("headers only: %s %v %v", m.Payload, m.Headers, err)
	}
	for _, bad := range []Envelope{{MessageID: "a..b", Version: "v"}, {MessageID: "a", Version: "a.b"}, {MessageID: "a"}} {
		if _, err := Message(bad, e, "b-1"); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
		if CheckEnvelope(bad) == nil {
			t.Errorf("%+v: Check accepts it", bad)
		}
	}
}
