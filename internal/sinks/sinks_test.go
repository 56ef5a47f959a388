package sinks

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceproof/tck/co"
)

func TestUpsertNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	x := NewIndex(NewScaled(1))
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
	n := NewNotifier(NewScaled(1), 0)
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 1})
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 1})
	_ = n.Send(ctx, co.Notification{MessageID: "m-9", Version: 2})
	if c, _ := n.Sent(ctx, "m-9", 1); c != 2 {
		t.Fatalf("Sent(m-9, 1) = %d, want 2", c)
	}
}

func TestStoreSurvivesReopenAndExpires(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	clock := NewScaled(60000) // one real millisecond is a scaled minute
	s, err := OpenStore(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Insert(ctx, "forever", "done", 0); !ok || err != nil {
		t.Fatalf("insert: %v %v", ok, err)
	}
	if ok, _ := s.Insert(ctx, "forever", "again", 0); ok {
		t.Fatal("insert over a live record succeeded")
	}
	if ok, _ := s.Insert(ctx, "short", "done", time.Minute); !ok {
		t.Fatal("insert short")
	}
	_ = s.Close()
	s2, err := OpenStore(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if r, ok, _ := s2.Get(ctx, "forever"); !ok || r.Value != "done" {
		t.Fatalf("record lost across reopen: %+v %v", r, ok)
	}
	if err := clock.SleepUntil(ctx, clock.Elapsed()+2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s2.Get(ctx, "short"); ok {
		t.Fatal("expired record still visible")
	}
	if ok, _ := s2.Insert(ctx, "short", "new", 0); !ok {
		t.Fatal("insert over an expired record failed")
	}
	if ok, _ := s2.CompareAndSwap(ctx, "short", "new", "newer", 0); !ok {
		t.Fatal("cas")
	}
	if ok, _ := s2.CompareAndSwap(ctx, "short", "new", "x", 0); ok {
		t.Fatal("cas on a stale value succeeded")
	}
}

// Two handles racing Insert on one key: exactly one wins, every time.
func TestStoreInsertIsAtomicAcrossHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	clock := NewScaled(1)
	var handles []*SQLStore
	for i := 0; i < 4; i++ {
		s, err := OpenStore(path, clock)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		handles = append(handles, s)
	}
	for trial := 0; trial < 30; trial++ {
		var wins atomic.Int32
		var wg sync.WaitGroup
		key := "k" + time.Now().Format("150405.000000000")
		for _, s := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.Insert(ctx, key, "x", 0)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("trial %d: %d winners", trial, wins.Load())
		}
	}
}
