package spec_test

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/extensions/globals"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/spec"
)

var entry = spec.Entry[int](func(int, spec.Option) *spec.Set {
	s := spec.New("eventstore")
	s.It("ES-1.1", func(r *spec.R) { r.Expect(1).To(Equal(2), "one is not two") })
	return s
})

// register stands for a suite's exported Register, as the author calls it.
func register(target int, opts ...spec.Option) { entry.Register(target, opts...) }

type quietT struct{}

func (quietT) Fail() {}

// Under Register a rule's spec is located at the author's Register call,
// not in the kit, so Ginkgo's output points the author at their own file.
func TestRegisterIsLocatedAtTheAuthorsCall(t *testing.T) {
	globals.Reset()
	var got []types.SpecReport
	ginkgo.ReportAfterEach(func(r types.SpecReport) { got = append(got, r) })
	_, file, line, _ := runtime.Caller(0)
	register(0) // the line after Caller(0)
	line++
	cfg := types.NewDefaultSuiteConfig()
	rep := types.NewDefaultReporterConfig()
	rep.Succinct = true
	saved := formatter.ColorableStdOut
	formatter.ColorableStdOut = io.Discard
	defer func() { formatter.ColorableStdOut = saved }()
	ginkgo.RunSpecs(quietT{}, "location", cfg, rep)
	if len(got) != 1 {
		t.Fatalf("%d specs reported, want 1", len(got))
	}
	r := got[0]
	if r.LeafNodeLocation.FileName != file || r.LeafNodeLocation.LineNumber != line {
		t.Errorf("the rule's spec is at %s, want %s:%d", r.LeafNodeLocation, file, line)
	}
	if r.State != types.SpecStateFailed || strings.Contains(r.Failure.Message, "Expected") {
		t.Errorf("failure %s %q: want a failure with the explained reason", r.State, r.Failure.Message)
	}
}
