package gen

import (
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestDrawRepeatsPerSeed(t *testing.T) {
	draw := func(seed int64) []string {
		src := NewSource(seed)
		var out []string
		for range 50 {
			out = append(out, Draw(src, ID(IDOptions{})).S)
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	if !slices.Equal(a, b) {
		t.Fatal("one seed drew two sequences")
	}
	if slices.Equal(a, c) {
		t.Fatal("two seeds drew one sequence")
	}
}

func TestIDClasses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := ID(IDOptions{}).Draw(t, "id")
		if v.S == "" || !utf8.ValidString(v.S) {
			t.Fatalf("%s: %q is empty or not UTF-8", v.Class, v.S)
		}
		if v.Class == ClassLong && utf8.RuneCountInString(v.S) < 256 {
			t.Fatalf("long id of %d chars", len(v.S))
		}
		twin, kind := Twin(v.S)
		if twin == v.S {
			t.Fatalf("%s of %q is the same string", kind, v.S)
		}
	})
}

func TestLargeBody(t *testing.T) {
	src := NewSource(3)
	for range 200 {
		if b := Draw(src, Body(true)); b.Class == ClassLarge {
			if len(b.B) < MiB {
				t.Fatalf("large body of %d bytes", len(b.B))
			}
			return
		}
	}
	t.Fatal("no large body in 200 draws")
}

func TestScheduleRepeatsAndSpreadsDelays(t *testing.T) {
	p := Plan{Steps: 40, Instances: 3, Horizon: time.Second, Pauses: 4}
	next := func(src *Source, i int) string { return Draw(src, ID(IDOptions{})).S }
	a, b := NewSchedule(5, p, next), NewSchedule(5, p, next)
	if !slices.Equal(a.Steps, b.Steps) {
		t.Fatal("one seed, two schedules")
	}
	if w := Waited(a.Steps); w < p.Horizon*3/4 || w > p.Horizon {
		t.Fatalf("waits add up to %s for a horizon of %s", w, p.Horizon)
	}
}

func TestShrinkFindsTheCulprits(t *testing.T) {
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	fails := func(xs []int) bool { return slices.Contains(xs, 17) && slices.Contains(xs, 71) }
	got, _ := Shrink(items, fails, time.Second, 1000)
	if !slices.Equal(got, []int{17, 71}) {
		t.Fatalf("shrunk to %v", got)
	}
}

// register is a one-value register: write v, read -> v.
type regIn struct {
	write bool
	v     int
}

var register = Model[int, regIn, int]{
	Init: func() int { return 0 },
	Step: func(s int, in regIn, out int) []int {
		if in.write {
			return []int{in.v}
		}
		if out == s {
			return []int{s}
		}
		return nil
	},
}

func TestCheck(t *testing.T) {
	ok := []Call[regIn, int]{
		{Client: 0, Input: regIn{true, 1}, Call: 0, Return: 10},
		{Client: 1, Input: regIn{false, 0}, Output: 1, Call: 5, Return: 6}, // overlaps the write: may see it
	}
	if v := Check(register, ok, time.Second); v != Linearizable {
		t.Fatalf("overlapping read of the new value: %s", v)
	}
	stale := []Call[regIn, int]{
		{Client: 0, Input: regIn{true, 1}, Call: 0, Return: 10},
		{Client: 1, Input: regIn{false, 0}, Output: 0, Call: 11, Return: 12}, // after the write: must see it
	}
	if v := Check(register, stale, time.Second); v != Violation {
		t.Fatalf("stale read after the write: %s", v)
	}
	if i := CheckSequential(register, stale); i != 1 {
		t.Fatalf("sequential check blamed call %d", i)
	}
}

// A write with no answer (output -1) may land after every other call: a
// read that misses it and a later read that sees it are both allowed, a
// read that goes back to the old value after seeing it is not.
func TestCheckPendingLandsLate(t *testing.T) {
	m := register
	m.Pending = func(in regIn, out int) bool { return in.write && out == -1 }
	late := []Call[regIn, int]{
		{Client: 0, Input: regIn{true, 1}, Output: -1, Call: 0, Return: 2},
		{Client: 1, Input: regIn{false, 0}, Output: 0, Call: 3, Return: 4},
		{Client: 1, Input: regIn{false, 0}, Output: 1, Call: 5, Return: 6},
	}
	if v := Check(m, late, time.Second); v != Linearizable {
		t.Fatalf("a pending write landing after a read: %s", v)
	}
	if v := Check(register, late, time.Second); v != Violation {
		t.Fatalf("without Pending the same write must end at its return: %s", v)
	}
	back := append(late, Call[regIn, int]{Client: 1, Input: regIn{false, 0}, Output: 0, Call: 7, Return: 8})
	if v := Check(m, back, time.Second); v != Violation {
		t.Fatalf("a read back to the old value after the write was seen: %s", v)
	}
}
