package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/target"
)

// Every row becomes a kind whose Start dispatches on the mode; the kinds
// the CLI and the self-test rely on are there, with their default mode first.
func TestTables(t *testing.T) {
	r := Targets()
	want := map[string]target.Mode{
		"eventstore/memory":   target.Embedded,
		"eventstore/sqlite":   target.Embedded,
		"eventstore/postgres": target.External,
		"broker/nats":         target.Embedded,
		"broker/nats-cluster": target.Container,
		"consumer/reference":  target.Embedded,
	}
	for key, first := range want {
		k, ok := r.Get(key)
		if !ok {
			t.Errorf("%s: not registered", key)
			continue
		}
		if k.Modes[0] != first {
			t.Errorf("%s: default mode %s, want %s", key, k.Modes[0], first)
		}
	}
	for _, suite := range []string{"eventstore", "broker", "consumer"} {
		var refs, mutants int
		for _, k := range r.Kinds(suite, true) {
			if k.Reference {
				refs++
			}
			if k.Mutant {
				mutants++
				if len(k.MustFail) == 0 || !strings.HasPrefix(k.Name, "mutant-") {
					t.Errorf("%s: a mutant needs rules it must fail and a mutant- name", k.Key())
				}
			}
		}
		// A suite may hold one reference per backend its mutants sit in
		// front of (broker: NATS and Kafka).
		if refs == 0 || mutants == 0 {
			t.Errorf("%s: %d reference targets and %d mutants, want at least one of each", suite, refs, mutants)
		}
	}
}

// A mode a kind has no constructor for is refused, not started another way.
func TestStartRefusesUnknownMode(t *testing.T) {
	k, ok := Targets().Get("broker/nats-cluster")
	if !ok {
		t.Fatal("broker/nats-cluster not registered")
	}
	_, err := k.Start(context.Background(), target.Ref{Suite: "broker", Name: "nats-cluster", Address: "embedded"})
	if err == nil || !strings.Contains(err.Error(), "cannot be reached as embedded") {
		t.Fatalf("embedded cluster: %v", err)
	}
}

// The embedded broker target starts and says what it is; a mutant is
// marked as one, with its defect in the notes.
func TestEmbeddedBrokerInfo(t *testing.T) {
	r := Targets()
	for _, key := range []string{"broker/nats", "broker/mutant-fresh-id"} {
		k, ok := r.Get(key)
		if !ok {
			t.Fatalf("%s not registered", key)
		}
		ref, err := target.Parse(key + "=embedded")
		if err != nil {
			t.Fatal(err)
		}
		st, err := k.Start(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Stop(); err != nil {
			t.Errorf("%s: stop: %v", key, err)
		}
		info := st.Info
		if !strings.HasPrefix(info.Address, "embedded nats://127.0.0.1:") || !strings.Contains(info.Version, "(embedded), nats.go v") {
			t.Errorf("%s: address %q, version %q", key, info.Address, info.Version)
		}
		if info.Config["restartable"] != "true" || info.Config["storage"] != "file" || info.Config["dedupeWindow"] == "" {
			t.Errorf("%s: config %v", key, info.Config)
		}
		// Besides the kit's own notes (its scratch settings), a mutant carries
		// exactly one note naming its defect, and the reference none.
		mutantNotes := 0
		for _, n := range info.Notes {
			if strings.HasPrefix(n, "mutant: ") {
				mutantNotes++
			}
		}
		if k.Mutant != info.Mutant || k.Mutant != (mutantNotes == 1) || mutantNotes > 1 {
			t.Errorf("%s: mutant %v, info %+v", key, k.Mutant, info)
		}
	}
}
