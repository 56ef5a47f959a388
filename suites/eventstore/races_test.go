package eventstore

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRacePower measures the race rules' catch rate against the public
// check-then-write mutants: each run is a fresh store and one rule's whole
// series of trials with the default configuration, exactly as one `tck run`
// does it. It is a measurement, not part of `make test`: it runs only with
// TCK_RACE_POWER=1 (scripts/race-power.sh, `make race-rate`) and prints one
// RATE line per mutant and rule; the script judges them.
//
// TCK_RACE_RUNS (default 100), TCK_RACE_WRITERS, TCK_RACE_TARGET (the
// power target, a rate), TCK_RACE_SPINS (spins before a yield) and
// TCK_RACE_RACERS=0 (a goroutine per writer per trial) override the
// configuration to compare choices (docs/eventstore.md records them).
func TestRacePower(t *testing.T) {
	if os.Getenv("TCK_RACE_POWER") != "1" {
		t.Skip("a measurement: run scripts/race-power.sh (or TCK_RACE_POWER=1)")
	}
	runs := envInt("TCK_RACE_RUNS", 100)
	cfg := RaceConfig{Writers: envInt("TCK_RACE_WRITERS", 0)}
	if s := os.Getenv("TCK_RACE_TARGET"); s != "" {
		cfg.Power, _ = strconv.ParseFloat(s, 64)
	}
	cfg = cfg.withDefaults()
	if os.Getenv("TCK_RACE_RACERS") == "0" {
		useRacers = false // a goroutine per writer per trial, to compare
	}
	if n := envInt("TCK_RACE_SPINS", 0); n > 0 {
		spinsBeforeYield = n
	}
	cases := raceMutants
	for _, rule := range []struct {
		id string
		tr func() trial
	}{{"ES-2.1", versionRace}, {"ES-2.2", createRace}, {"ES-2.3", requestRace}, {"ES-2.4", crossAggregateRace}, {"ES-2.5", mixedRace}, {"ES-2.6", loadRace}} {
		cases = append(cases, raceCase{"", rule.id, rule.tr})
	}
	for _, c := range cases {
		name := c.mutant
		if name == "" {
			name = "memory"
		}
		t.Run(name+"/"+c.rule, func(t *testing.T) {
			open := func() es.EventStore { return memory.NewDB().Open() }
			cfg, runs := cfg, runs
			if c.mutant != "" {
				m := mutantNamed(t, c.mutant)
				open = func() es.EventStore { return m.Build.NewDB().Open() }
			} else {
				// The reference, to its power target: how long a correct
				// store takes, and that it never fails.
				runs = max(5, runs/10)
				if c.rule == "ES-2.4" || c.rule == "ES-2.6" {
					cfg.Power *= 5
				}
			}
			var caught, unknown, contendedSum, trialSum int
			var spent []time.Duration
			var total time.Duration
			for range runs {
				f := &fixture{ctx: context.Background(), store: open(), rec: history.New(), ev: &verdict.Evidence{}, rule: c.rule}
				out := runTrials(f.ctx, f, cfg, c.trial())
				switch {
				case out.Violation != "":
					caught++
				case !out.reached():
					unknown++
				}
				contendedSum += out.Contended
				trialSum += out.Trials
				spent = append(spent, out.Elapsed)
				total += out.Elapsed
			}
			slices.Sort(spent)
			// Violations per contended trial, for choosing the power
			// target: each catching run saw one violation.
			rate := float64(caught) / float64(max(1, contendedSum))
			t.Logf("RATE mutant=%s rule=%s caught=%d runs=%d unknown=%d wall_median=%s wall_max=%s trials=%d contended=%d violation_per_contended=%.4f writers=%s target=%d total=%s contended_per_s=%.0f",
				name, c.rule, caught, runs, unknown, spent[len(spent)/2].Round(time.Millisecond), spent[len(spent)-1].Round(time.Millisecond),
				trialSum, contendedSum, rate, cfg.writerRange(), contendedFor(cfg.Power), total.Round(time.Millisecond), float64(contendedSum)/total.Seconds())
		})
	}
}

// raceMutants are the public check-then-write mutants and the race rules
// each must fail.
type raceCase struct {
	mutant, rule string
	trial        func() trial
}

var raceMutants = []raceCase{
	{"request-check-then-write", "ES-2.3", requestRace},
	{"version-check-then-write", "ES-2.1", versionRace},
	{"version-check-then-write", "ES-2.2", createRace},
	{"version-check-then-write", "ES-2.5", mixedRace},
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func mutantNamed(t *testing.T, name string) esmutants.Mutant {
	for _, m := range esmutants.All() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no mutant %s", name)
	return esmutants.Mutant{}
}
