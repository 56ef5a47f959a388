package nats

import (
	"encoding/json"
	"testing"
)

// TestFlatten: every field of a configuration becomes one text setting by
// its JSON name, durations as durations, the two filter fields one
// setting, and a field the client library does not know is kept.
func TestFlatten(t *testing.T) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"durable_name":"w","ack_policy":"explicit","ack_wait":2000000000,
		"backoff":[1000000000,5000000000],"filter_subject":"orders.b","filter_subjects":["orders.a"],
		"deliver_policy":"new","max_ack_pending":1,"headers_only":false,"metadata":{"k":"v"},"a_later_field":7}`), &cfg); err != nil {
		t.Fatal(err)
	}
	got := flatten(cfg)
	for k, want := range map[string]string{
		"ack_wait": "2s", "backoff": "1s, 5s", "filter_subjects": "orders.a, orders.b", "deliver_policy": "new",
		"max_ack_pending": "1", "headers_only": "false", "metadata": `{"k":"v"}`, "a_later_field": "7",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if _, ok := got["filter_subject"]; ok {
		t.Error("filter_subject is not folded into filter_subjects")
	}
	var stream map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"name":"S","discard":"new","max_msgs":5,"duplicate_window":120000000000}`), &stream)
	if s := flatten(stream); s["discard"] != "new" || s["max_msgs"] != "5" || s["duplicate_window"] != "2m0s" || s["filter_subjects"] != "" {
		t.Errorf("stream settings %v", s)
	}
	if _, ok := flatten(stream)["filter_subjects"]; ok {
		t.Error("a stream has no filter_subjects")
	}
}
