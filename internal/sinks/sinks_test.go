package sinks_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/sinks/storetest"
)

func TestUpsertNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	x := sinks.NewIndex(sinks.NewScaled(1))
	if ok, _ := x.Upsert(ctx, co.Doc{ID: "m-9", Version: 2, Body: "v2"}); !ok {
		t.Fatal("first upsert not applied")
	}
	if ok, _ := x.Upsert(ctx, co.Doc{ID: "m-9", Version: 1, Body: "v1"}); ok {
		t.Fatal("an older version overwrote a newer one")
	}
	if ok, _ := x.Upsert(ctx, co.Doc{ID: "m-9", Version: 2, Body: "v2"}); ok {
		t.Fatal("the same version again was applied")
	}
	if n := len(x.Effects()); n != 1 {
		t.Fatalf("effects = %d, want 1", n)
	}
	// A plain put lets the stale version win and counts as an effect.
	_ = x.Put(ctx, co.Doc{ID: "m-9", Version: 1, Body: "v1"})
	if d, _, _ := x.Get(ctx, "m-9"); d.Version != 1 {
		t.Fatalf("plain put did not overwrite: %+v", d)
	}
	_ = x.Put(ctx, co.Doc{ID: "m-9", Version: 1, Body: "v1"})
	if n := len(x.Effects()); n != 2 {
		t.Fatalf("effects = %d, want 2 (an unchanged rewrite is no effect)", n)
	}
}

func TestNotifierCountsEverySend(t *testing.T) {
	ctx := context.Background()
	n := sinks.NewNotifier(sinks.NewScaled(1), 0)
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 1})
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 1})
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 2})
	if c, _ := n.Sent(ctx, "m-9", 1); c != 2 {
		t.Fatalf("Sent(m-9, 1) = %d, want 2", c)
	}
}

func TestMemStore(t *testing.T) {
	clock := sinks.NewScaled(60000)
	s := sinks.NewMemStore(clock)
	storetest.Run(t, clock, func() (sinks.Store, error) { return s, nil })
}
