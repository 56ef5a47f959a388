package target

import (
	"context"
	"testing"
)

// A URL-only kind with AddressEnv takes its default address from the
// variable; unset, it resolves with no address (Start then reports the
// target unavailable), never a usage error. Without AddressEnv a missing
// address stays a usage error.
func TestResolveAddressEnv(t *testing.T) {
	start := func(context.Context, Ref) (*Started, error) { return nil, nil }
	r := NewRegistry()
	r.Add(Kind{Suite: "broker", Name: "withenv", Modes: []Mode{External}, AddressEnv: "TCK_TEST_ADDR", Start: start})
	r.Add(Kind{Suite: "broker", Name: "noenv", Modes: []Mode{External}, Start: start})

	t.Setenv("TCK_TEST_ADDR", "redis://127.0.0.1:6379/0")
	if _, ref, err := r.Resolve(Ref{Suite: "broker", Name: "withenv"}); err != nil || ref.Address != "redis://127.0.0.1:6379/0" {
		t.Errorf("with the variable set: %+v, %v", ref, err)
	}
	t.Setenv("TCK_TEST_ADDR", "")
	if _, ref, err := r.Resolve(Ref{Suite: "broker", Name: "withenv"}); err != nil || ref.Address != "" || ref.Mode() != External {
		t.Errorf("with the variable unset: %+v, %v", ref, err)
	}
	if _, _, err := r.Resolve(Ref{Suite: "broker", Name: "noenv"}); err == nil {
		t.Error("a URL-only kind without AddressEnv resolved without an address")
	}
}
