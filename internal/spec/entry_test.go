package spec_test

import (
	"testing"

	"github.com/onceproof/tck/internal/spec"
)

type kitHooks struct{ fault string }

// The kit's hooks reach the suite's set builder through Collect, and an
// author's options (none of them hooks) leave the zero hooks.
func TestHooksReachTheSet(t *testing.T) {
	var got []kitHooks
	e := spec.Entry[int](func(_ int, o spec.Option) *spec.Set {
		got = append(got, spec.HooksOf[kitHooks](o))
		return spec.New("eventstore")
	})
	register := func(target int, opts ...spec.Option) { e.Register(target, opts...) }
	if s := spec.Collect(register, 1, spec.With(kitHooks{fault: "restart"}), spec.UnknownIsSkip()); s == nil {
		t.Fatal("Collect gave no set")
	}
	spec.Collect(register, 2, spec.ReportTo(t.TempDir()))
	if len(got) != 2 || got[0].fault != "restart" || got[1] != (kitHooks{}) {
		t.Fatalf("hooks seen by the set builder = %+v, want [{restart} {}]", got)
	}
	if h := spec.HooksOf[string](spec.With(kitHooks{fault: "x"})); h != "" {
		t.Fatalf("hooks of another type = %q, want none", h)
	}
}
