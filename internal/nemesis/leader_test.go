package nemesis

import (
	"context"
	"errors"
	"slices"
	"testing"
)

type notes []string

func (n *notes) Note(actor, action, key, result string) {
	*n = append(*n, actor+" "+action+" "+key+": "+result)
}

// Leaders counts a change only when another node leads: the same leader
// back after a gap is none; n1 -> none -> n2 is one.
func TestLeadersCountsChanges(t *testing.T) {
	answers := []string{"n1", "", "n1", "", "n2", "n2"}
	i := 0
	lookup := func(context.Context) (string, error) {
		a := answers[i]
		i++
		if a == "" {
			return "", errors.New("no leader")
		}
		return a, nil
	}
	var log notes
	l := Track("s", lookup, &log)
	for range answers {
		_, _ = l.Leader(context.Background())
	}
	if l.Changes() != 1 || !slices.Equal(l.History(), []string{"n1", "n2"}) || l.Known() != "n2" || l.ElectedAt().IsZero() {
		t.Fatalf("changes %d, history %v, known %q", l.Changes(), l.History(), l.Known())
	}
	want := []string{
		"observer leader s: none -> n1",
		"observer leader s: n1 -> none (no leader)",
		"observer leader s: none -> n1",
		"observer leader s: n1 -> none (no leader)",
		"observer leader s: n1 -> n2",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("timeline:\n%v\nwant\n%v", log, want)
	}
}
