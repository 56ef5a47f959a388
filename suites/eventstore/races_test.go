package eventstore

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/mutants"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRaceRulesCatchCheckThenWrite measures what the issue asks of the race
// rules: each check-then-write mutant is caught in at least 99 of 100
// independent runs, with the default race configuration. Each run is a fresh
// store and a full series of trials, exactly as one `tck run` does it.
// TCK_RACE_RUNS overrides the number of runs.
func TestRaceRulesCatchCheckThenWrite(t *testing.T) {
	runs := 100
	if s := os.Getenv("TCK_RACE_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	cfg := RaceConfig{}.withDefaults()
	if s := os.Getenv("TCK_RACE_BUDGET"); s != "" {
		cfg.Budget, _ = time.ParseDuration(s)
	}
	cases := []struct {
		mutant string
		rule   string
		trial  trial
	}{
		{"request-check-then-write", "ES-2.3", requestRace()},
		{"version-check-then-write", "ES-2.1", versionRace()},
		{"version-check-then-write", "ES-2.2", createRace()},
		{"version-check-then-write", "ES-2.5", mixedRace()},
	}
	for _, c := range cases {
		t.Run(c.mutant+"/"+c.rule, func(t *testing.T) {
			m := mutantNamed(t, c.mutant)
			caught := 0
			var trials []int
			var spent []time.Duration
			for i := 0; i < runs; i++ {
				db := m.NewDB()
				f := &fixture{ctx: context.Background(), store: db.Open(), rec: history.New(), ev: &verdict.Evidence{}, rule: c.rule}
				out := runTrials(f.ctx, f, cfg, c.trial)
				if out.Violation != "" {
					caught++
				}
				trials = append(trials, out.Trials)
				spent = append(spent, out.Elapsed)
			}
			sort.Ints(trials)
			sort.Slice(spent, func(i, j int) bool { return spent[i] < spent[j] })
			t.Logf("%s %s: caught in %d of %d runs; trials to detection median %d, max %d; time median %s, max %s",
				c.mutant, c.rule, caught, runs, trials[len(trials)/2], trials[len(trials)-1], spent[len(spent)/2], spent[len(spent)-1])
			if caught*100 < 99*runs {
				t.Errorf("caught in %d of %d runs, want at least 99%%", caught, runs)
			}
		})
	}
}

func mutantNamed(t *testing.T, name string) mutants.Mutant {
	for _, m := range mutants.All {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no mutant %s", name)
	return mutants.Mutant{}
}

var _ = fmt.Sprint
