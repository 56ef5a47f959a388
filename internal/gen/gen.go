// Package gen is the kit's generative engine, shared by the suites that
// generate what they test rather than enumerate it:
//
//   - values: adversarial generators (ids, bodies, metadata) built on
//     pgregory.net/rapid, each value tagged with the class it was drawn from;
//   - Source: draws from those generators deterministically from a seed, with
//     no *testing.T (the tck CLI has none), through rapid's Generator.Example;
//   - Schedule: operations from a seed, spread over instances and over time;
//   - History: what ran, on which instance, with call and return times;
//   - Check / Linearizable: observed histories against a sequential model,
//     through github.com/anishathalye/porcupine where calls overlap;
//   - Shrink: the smallest failing schedule, by delta debugging over replays.
//
// A rule picks its seed with Seed (the run's --seed, or one of its own),
// records it as the figure "seed", and a run with that seed replays the same
// schedule and values.
package gen

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"pgregory.net/rapid"
)

// Seed is the seed a rule runs with: given when the run set one (tck run
// --seed, Target.Seed), else a fresh one from the time. Never 0, so that a
// recorded seed always means "this one".
func Seed(given int64) int64 {
	if given != 0 {
		return given
	}
	return int64(rand.Uint64N(1<<53-1)) + 1
}

// Source draws values deterministically from one seed: the same seed gives
// the same sequence of draws. It is not safe for concurrent use.
type Source struct {
	seed int64
	rnd  *rand.Rand
}

// NewSource starts the draws of seed.
func NewSource(seed int64) *Source {
	return &Source{seed: seed, rnd: rand.New(rand.NewPCG(uint64(seed), 0x6f6e6365))}
}

// Seed is the seed the source was started with.
func (s *Source) Seed() int64 { return s.seed }

// Rand is the source's generator for plain choices (which operation, which
// instance, how long a delay).
func (s *Source) Rand() *rand.Rand { return s.rnd }

// Draw draws one value of g: g.Example with a seed derived from the
// source's, so the draws of one seed repeat.
func Draw[V any](s *Source, g *rapid.Generator[V]) V {
	return g.Example(int(s.rnd.Uint64() >> 1))
}

// Tally counts what a generated run covered (operations, value classes), for
// the power a rule states in its evidence.
type Tally map[string]int

// Add counts one occurrence of what.
func (t Tally) Add(what string) { t[what]++ }

// String lists the counts, largest first: "append 40, load 12".
func (t Tally) String() string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if t[keys[i]] != t[keys[j]] {
			return t[keys[i]] > t[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, t[k])
	}
	return strings.Join(parts, ", ")
}

// Horizon is how far in time a schedule spreads its delays: def, or
// maxWait when the run allows longer waits (tck run --max-wait).
func Horizon(def, maxWait time.Duration) time.Duration {
	return max(def, maxWait)
}
