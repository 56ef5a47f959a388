// Package storetest checks a de-dupe store the kit hands in-process
// consumers (internal/sinks, internal/sqlstore) against co.Store's contract.
package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/sinks"
)

// Run checks a de-dupe store: records survive closing a handle and opening
// another, expire on clock, and Insert and CompareAndSwap are atomic across
// handles. open gives a new handle on the same records; clock must run at
// least 60000 times real time (a real millisecond is a scaled minute).
func Run(t *testing.T, clock *sinks.Scaled, open func() (sinks.Store, error)) {
	t.Run("survives reopen and expires", func(t *testing.T) { reopen(t, clock, open) })
	t.Run("insert is atomic across handles", func(t *testing.T) { atomicInsert(t, open) })
}

func reopen(t *testing.T, clock *sinks.Scaled, open func() (sinks.Store, error)) {
	ctx := context.Background()
	s, err := open()
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
	s2, err := open()
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

// Four handles racing Insert on one key: exactly one wins, every time.
func atomicInsert(t *testing.T, open func() (sinks.Store, error)) {
	ctx := context.Background()
	var handles []sinks.Store
	for i := 0; i < 4; i++ {
		s, err := open()
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
