package gen

import (
	"strconv"
	"testing"
)

// Every version edge is just below a boundary of its class, a digit edge
// is one whose successor sorts before it as text, and every calendar edge
// is the boundary its class names; the draws of one seed repeat.
func TestEdges(t *testing.T) {
	src, again := NewSource(7), NewSource(7)
	classes := Tally{}
	for range 300 {
		e := Draw(src, VersionEdge())
		if e != Draw(again, VersionEdge()) {
			t.Fatal("the same seed drew another version edge")
		}
		classes.Add(e.Class)
		if e.Class == ClassDigits && strconv.FormatInt(e.Below+1, 10) >= strconv.FormatInt(e.Below, 10) {
			t.Errorf("digit edge %d: %d does not sort before it as text", e.Below, e.Below+1)
		}
		d := Draw(src, DigitEdge())
		_ = Draw(again, DigitEdge())
		if d.Class != ClassDigits {
			t.Errorf("DigitEdge drew %v", d)
		}
		c, m := Draw(src, Calendar()), Draw(src, Midnight())
		_, _ = Draw(again, Calendar()), Draw(again, Midnight())
		classes.Add("calendar " + c.Class)
		if c.At.Minute() != 0 || c.At.Second() != 0 || (c.Class != ClassHour && c.At.Hour() != 0) {
			t.Errorf("%s edge %s is not its boundary", c.Class, c.At)
		}
		if m.Class == ClassHour || m.At.Hour() != 0 || m.At.Minute() != 0 {
			t.Errorf("Midnight drew %s %s", m.Class, m.At)
		}
		if (c.Class == ClassMonth || c.Class == ClassYear) && c.At.Day() != 1 {
			t.Errorf("%s edge %s is not the first of a month", c.Class, c.At)
		}
	}
	if len(classes) < 8+5 {
		t.Errorf("300 draws covered only %v", classes)
	}
}
