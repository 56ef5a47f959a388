package leftovers

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestStaleTempDirs(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	root := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	mk := func(name string) string {
		d := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(d, "sub"), 0o755)
		os.WriteFile(filepath.Join(d, "sub", "f"), []byte("x"), 0o644)
		for _, p := range []string{filepath.Join(d, "sub", "f"), filepath.Join(d, "sub"), d} {
			os.Chtimes(p, old, old)
		}
		return d
	}
	stale, open, fresh, other := mk("onceproof-nats-1"), mk("onceproof-nats-2"), mk("tck-api-3"), mk("someone-else")
	f, err := os.Open(filepath.Join(open, "sub", "f")) // a live run holds it
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.WriteFile(filepath.Join(fresh, "new"), []byte("x"), 0o644) // written just now
	got := StaleTempDirs(root, []string{"onceproof-", "tck-"}, time.Hour)
	if !slices.Equal(got, []string{stale}) {
		t.Errorf("stale: %v, want only %s (not %s, %s, %s)", got, stale, open, fresh, other)
	}
}
