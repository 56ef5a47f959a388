package spec

import (
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// Option tunes a suite's Check and Register. Each suite re-exports it by
// an alias (Option) and the options by
// one-line functions, so the four suites share one option type and none
// has a variable an importer could reassign.
type Option struct {
	unknownIsSkip bool
	reportDir     string
	into          **Set // Collect: hand the rules back instead of registering them
	hooks         any   // With: the kit's own hooks for the suite's rules
}

// With hands the kit's own hooks (a fault, an inspector, a declared
// profile, a private server) to a suite's rules: an option only the kit can
// make, so a suite's public Target holds the author's fields alone. The
// suite reads them with HooksOf.
func With(hooks any) Option { return Option{hooks: hooks} }

// HooksOf is the hooks of type H among o's, the zero H when none were given.
func HooksOf[H any](o Option) H {
	h, _ := o.hooks.(H)
	return h
}

// UnknownIsSkip reports an undecided rule as a skip (a Ginkgo skip, a
// skipped subtest) instead of a failure. The verdict stays unknown in a
// report; without this option an undecided rule fails the author's test:
// unknown is never a pass.
func UnknownIsSkip() Option { return Option{unknownIsSkip: true} }

// ReportTo writes the run's report bundle into dir, as TCK_REPORT_DIR does.
func ReportTo(dir string) Option { return Option{reportDir: dir} }

// options folds opts into one.
func options(opts []Option) Option {
	var o Option
	for _, op := range opts {
		o.unknownIsSkip = o.unknownIsSkip || op.unknownIsSkip
		if op.reportDir != "" {
			o.reportDir = op.reportDir
		}
		if op.into != nil {
			o.into = op.into
		}
		if op.hooks != nil {
			o.hooks = op.hooks
		}
	}
	return o
}

// Entry is a suite's two entry points over the one function that builds its
// rules against a target and the options (the kit's hooks among them), so
// Check and Register run the same rules.
type Entry[T any] func(target T, o Option) *Set

// Check runs the rules as subtests of t (Set.Test).
func (e Entry[T]) Check(t *testing.T, target T, opts ...Option) {
	t.Helper()
	e(target, options(opts)).Test(t, opts...)
}

// Register registers the rules as Ginkgo specs (Set.Ginkgo), located at
// the author's call of the suite's Register (two frames up), so Ginkgo's
// output points there, not into the kit.
func (e Entry[T]) Register(target T, opts ...Option) {
	o := options(opts)
	if o.into != nil {
		*o.into = e(target, o)
		return
	}
	e(target, o).ginkgoAt(types.NewCodeLocation(2), o)
}
