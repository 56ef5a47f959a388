package broker

import (
	"slices"
	"testing"
)

// TestSeedReproduces: the members of BR-2.9 draw their choices (nak, crash,
// ack) from streams of the rule's seed, so a run with the same seed draws
// the same choices, member by member.
func TestSeedReproduces(t *testing.T) {
	draws := func(seed int64) [queueMembers][]float64 {
		var out [queueMembers][]float64
		for m := range queueMembers {
			mb := newMember(&queue{f: &fixture{t: target{Target: Target{Seed: seed}}}}, m)
			for range 200 {
				out[m] = append(out[m], mb.rng.Float64())
			}
		}
		return out
	}
	a, b, c := draws(7), draws(7), draws(8)
	for m := range queueMembers {
		if !slices.Equal(a[m], b[m]) {
			t.Errorf("member %d: the same seed drew different choices", m)
		}
		if slices.Equal(a[m], c[m]) {
			t.Errorf("member %d: another seed drew the same choices", m)
		}
	}
	if slices.Equal(a[0], a[1]) {
		t.Error("two members drew the same choices")
	}
}
