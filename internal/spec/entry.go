package spec

import "testing"

// Option tunes a suite's Register. Each suite re-exports it by an alias
// (RegisterOption) and UnknownIsSkip by a one-line function, so the four
// suites share one option type and none has a variable an importer could
// reassign.
type Option struct{ unknownIsSkip bool }

// UnknownIsSkip reports an undecided rule as a Ginkgo skip instead of a
// failure. The verdict stays unknown in a report; without this option an
// undecided rule fails the author's suite: unknown is never a pass.
func UnknownIsSkip() Option { return Option{unknownIsSkip: true} }

// Entry is a suite's two entry points over the one function that builds its
// rules against a target, so Check and Register run the same rules.
type Entry[T any] func(target T) *Set

// Check runs the rules as subtests of t (Set.Test).
func (e Entry[T]) Check(t *testing.T, target T) {
	t.Helper()
	e(target).Test(t)
}

// Register registers the rules as Ginkgo specs (Set.Ginkgo).
func (e Entry[T]) Register(target T, opts ...Option) { e(target).Ginkgo(opts...) }
