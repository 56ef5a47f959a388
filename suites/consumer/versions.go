package consumer

import (
	"fmt"

	"github.com/onceproof/tck/internal/gen"
)

// Versions past the tame single digits. Every message a rule uses starts
// at a version drawn just below a boundary where a consumer's own
// representation may break: one more decimal digit ("10" sorts before "9"
// as text), the largest int8 to uint32, 2^53 (a float64, as a JSON number
// decoded without care, cannot tell 2^53 from 2^53+1). A rule's version 1
// of a message is the value below the boundary, its version 2 the one past
// it. The first message of every rule crosses a digit boundary, so every
// rule with an edit compares two versions whose text order is wrong; the
// others draw any class.

// version is the event version of the message base's k-th version.
func (w *world) version(base string, k int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	start, ok := w.versions[base]
	if !ok {
		g := gen.VersionEdge()
		if len(w.versions) == 0 {
			g = gen.DigitEdge()
		}
		e := gen.Draw(w.src, g)
		start = e.Below
		w.versions[base] = start
		w.edges.Add(e.Class)
		if len(w.versions) <= 3 {
			w.rec.Note("kit", "versions", base+w.suffix(), fmt.Sprintf("v1 is %d, v2 is %d (%s)", start, start+1, e.Class))
		}
	}
	return int(start) + k - 1
}
