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
	mkAs := func(name string, marked bool) string {
		d := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(d, "sub"), 0o755)
		os.WriteFile(filepath.Join(d, "sub", "f"), []byte("x"), 0o644)
		paths := []string{filepath.Join(d, "sub", "f"), filepath.Join(d, "sub"), d}
		if marked {
			os.WriteFile(filepath.Join(d, TempMarker), []byte("x"), 0o644)
			paths = append([]string{filepath.Join(d, TempMarker)}, paths...)
		}
		for _, p := range paths {
			os.Chtimes(p, old, old)
		}
		return d
	}
	mk := func(name string) string { return mkAs(name, true) }
	stale, open, fresh, other := mk("onceproof-nats-1"), mk("onceproof-nats-2"), mk("tck-api-3"), mk("someone-else")
	// A kit-like name without the kit's marker (a user's folder, the data
	// directory postgres-local.sh leaves) is never the kit's (issue 35).
	mine, pg := mkAs("tck-mine", false), mkAs("tck-postgres", false)
	f, err := os.Open(filepath.Join(open, "sub", "f")) // a live run holds it
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.WriteFile(filepath.Join(fresh, "new"), []byte("x"), 0o644) // written just now
	got := StaleTempDirs(root, []string{"onceproof-", "tck-"}, time.Hour)
	if !slices.Equal(got, []string{stale}) {
		t.Errorf("stale: %v, want only %s (not %s, %s, %s, %s, %s)", got, stale, open, fresh, other, mine, pg)
	}
}

func TestMkdirTempCarriesMarker(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := MkdirTemp("tck-x-*")
	if err != nil {
		t.Fatal(err)
	}
	if !IsKitTemp(d) || IsKitTemp(t.TempDir()) {
		t.Errorf("IsKitTemp(%s) = %v", d, IsKitTemp(d))
	}
	d2, remove, err := TempDir("onceproof-y-")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if !IsKitTemp(d2) {
		t.Errorf("TempDir's %s lacks the marker", d2)
	}
}
