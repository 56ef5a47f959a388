package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/onceproof/tck/mq"
)

// TestSplitManagement: the management parameter comes off the address,
// the rest of the query stays.
func TestSplitManagement(t *testing.T) {
	for _, c := range []struct{ in, addr, mgmt string }{
		{"amqp://u:p@h:5672/", "amqp://u:p@h:5672/", ""},
		{"amqp://u:p@h:5672/?management=http://h:15672/", "amqp://u:p@h:5672/", "http://h:15672"},
		{"amqp://u:p@h:5672/v?heartbeat=10&management=http://h:1", "amqp://u:p@h:5672/v?heartbeat=10", "http://h:1"},
	} {
		a, m := SplitManagement(c.in)
		if a != c.addr || m != c.mgmt {
			t.Errorf("%s: %q %q, want %q %q", c.in, a, m, c.addr, c.mgmt)
		}
	}
}

// TestEffectivePrecedence: a numeric limit set by both argument and
// policy is the smaller; a name is the argument's; a policy's alone
// applies; what neither sets is empty.
func TestEffectivePrecedence(t *testing.T) {
	set, from := Effective("quorum",
		map[string]any{"x-message-ttl": float64(60000), "x-dead-letter-exchange": "a", "x-max-length": float64(10)},
		map[string]any{"message-ttl": float64(2000), "dead-letter-exchange": "b", "max-length": float64(100), "expires": float64(5000)}, "p")
	want := map[string]string{"x-queue-type": "quorum", "x-message-ttl": "2000", "x-dead-letter-exchange": "a", "x-max-length": "10", "x-expires": "5000", "x-delivery-limit": "", "policy": "p"}
	for k, v := range want {
		if set[k] != v {
			t.Errorf("%s = %q (from %s), want %q", k, set[k], from[k], v)
		}
	}
	if !strings.HasPrefix(from["x-message-ttl"], "policy p") || from["x-max-length"] == "" || !strings.HasPrefix(from["x-max-length"], "argument") {
		t.Errorf("sources: %v", from)
	}
}

// TestInspectorDefaults: what nothing sets is RabbitMQ's default by queue
// type and version (a quorum queue's delivery limit 20 from 4.0 only).
func TestInspectorDefaults(t *testing.T) {
	for _, c := range []struct {
		version, qtype string
		want           map[string]string
		absent         []string
	}{
		{"3.10.8", "quorum", map[string]string{"x-overflow": "drop-head", "x-dead-letter-strategy": "at-most-once", "x-delivery-limit": ""}, nil},
		{"4.0.5", "quorum", map[string]string{"x-delivery-limit": "20"}, nil},
		{"4.0.5", "classic", map[string]string{"x-overflow": "drop-head"}, []string{"x-delivery-limit", "x-dead-letter-strategy"}},
		{"3.13.7", "stream", nil, []string{"x-overflow", "x-delivery-limit", "x-dead-letter-strategy"}},
	} {
		in := &Inspector{version: c.version}
		set, _ := Effective(c.qtype, nil, nil, "")
		in.fillDefaults(set)
		for k, v := range c.want {
			if got, ok := set[k]; !ok || got != v {
				t.Errorf("%s %s: %s = %q, want %q", c.version, c.qtype, k, got, v)
			}
		}
		for _, k := range c.absent {
			if _, ok := set[k]; ok {
				t.Errorf("%s %s: %s present", c.version, c.qtype, k)
			}
		}
	}
}

// TestInspectReadsQueue: on a server of the kit's own (management plugin
// on), a queue's arguments are read by RabbitMQ's names; a missing queue
// is not found; without the management API every argument is named
// unreadable, never guessed.
func TestInspectReadsQueue(t *testing.T) {
	t.Parallel() // each on a server of its own or the shared one, under a run of its own
	ctx := context.Background()
	rt := sharedLocal(t)
	b, err := Connect(ctx, rt.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ch, err := b.channel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("team-q", true, false, false, false, map[string]any{"x-queue-type": "quorum", "x-delivery-limit": 4, "x-max-length": 50}); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = ch.QueueDelete("team-q", false, false, false) }()
	in, err := Inspect(ctx, rt.URL, rt.Management, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ti, err := in.Topic(ctx, "team-q")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"x-queue-type": "quorum", "x-delivery-limit": "4", "x-max-length": "50", "x-overflow": "drop-head", "x-message-ttl": "", "policy": ""} {
		if ti.Settings[k] != v {
			t.Errorf("%s = %q, want %q", k, ti.Settings[k], v)
		}
	}
	if _, err := in.Topic(ctx, "no-such-queue"); !errors.Is(err, mq.ErrNotFound) {
		t.Errorf("a missing queue: %v", err)
	}
	blind, err := Inspect(ctx, rt.URL, "http://127.0.0.1:1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ti, err = blind.Topic(ctx, "team-q")
	if err != nil {
		t.Fatal(err)
	}
	if v := ti.Settings["x-delivery-limit"]; !strings.HasPrefix(v, "not readable: the management API at http://127.0.0.1:1 did not answer") {
		t.Errorf("without the management API: x-delivery-limit %q", v)
	}
	si, _ := blind.Server(ctx)
	if !strings.HasPrefix(si.Settings["consumer_timeout"], "not readable") {
		t.Errorf("consumer_timeout on a server the kit did not configure: %q", si.Settings["consumer_timeout"])
	}
}
