package selftest

import (
	"slices"
	"testing"

	"github.com/onceproof/tck/internal/target"
)

// The reference runs every rule; a mutant runs its registered rules plus
// every rule no mutant is registered to fail; a mutant registered to fail
// nothing runs every rule.
func TestPlanRules(t *testing.T) {
	kinds := []target.Kind{
		{Name: "reference", Reference: true},
		{Name: "a", Mutant: true, MustFail: []string{"R-1"}},
		{Name: "b", Mutant: true, MustFail: []string{"R-2", "R-1"}},
		{Name: "c", Mutant: true},
	}
	p := planFor([]string{"R-1", "R-2", "R-3"}, kinds)
	for _, c := range []struct {
		kind int
		want []string
	}{{0, nil}, {1, []string{"R-1", "R-3"}}, {2, []string{"R-2", "R-1", "R-3"}}, {3, nil}} {
		if got := p.rules(kinds[c.kind]); !slices.Equal(got, c.want) {
			t.Errorf("%s runs %v, want %v", kinds[c.kind].Name, got, c.want)
		}
	}
	if !ran(nil, "R-9") || ran([]string{"R-1"}, "R-2") {
		t.Error("ran: nil selects every rule, a list only its own")
	}
}
