package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/onsi/gomega/types"

	"github.com/onceproof/tck/internal/spec"
)

// A rule's verdict judges the target. When the kit's own set-up fails
// (opening a handle, creating a scratch topic or a consumer, starting or
// restarting a server of the rule's own, the fault proxy, a Docker call)
// the rule never reached what it checks: it is unknown, with a one-line
// reason naming the step and the error's text, and the step is failed on
// its timeline. Only what the target did fails a rule.

// setupError is a failure of the kit's own set-up at step.
type setupError struct {
	step string
	err  error
}

func (e *setupError) Error() string { return e.step + ": " + e.err.Error() }
func (e *setupError) Unwrap() error { return e.err }

// kitStep runs one set-up step of the kit, records it on the rule's
// timeline (ok, or failed with the error's text) and marks its error as
// the kit's.
func (f *fixture) kitStep(action, key string, do func() error) error {
	h := f.rec.Invoke("kit", action, key)
	if err := do(); err != nil {
		h.Fail(oneLine(err.Error()))
		return &setupError{step: describeStep(action, key), err: err}
	}
	h.OK("")
	return nil
}

func describeStep(action, key string) string {
	if key == "" {
		return action
	}
	return action + " " + key
}

// failed is the judge of a workload that could not do its job: unknown
// when the kit's own set-up failed, fail when the target did.
func (f *fixture) failed(err error, what string) judge {
	var se *setupError
	if errors.As(err, &se) {
		return func(r *spec.R) {
			r.Unknown("the kit's own set-up failed (%s), so the rule was not checked: %s: %s", what, se.step, oneLine(se.err.Error()))
		}
	}
	return func(r *spec.R) {
		r.Expect(err).To(succeeded(), "%s: %s", f.rule, what)
	}
}

// oneLine is s on one line, for a reason or a timeline entry.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// succeeded matches a nil error; its failure message is the error's text,
// never a dump of the error value.
func succeeded() types.GomegaMatcher { return noError{} }

type noError struct{}

func (noError) Match(actual any) (bool, error) {
	if actual == nil {
		return true, nil
	}
	if _, ok := actual.(error); !ok {
		return false, fmt.Errorf("succeeded() expects an error, got %T", actual)
	}
	return false, nil
}

func (noError) FailureMessage(actual any) string {
	return "error: " + oneLine(actual.(error).Error())
}

func (noError) NegatedFailureMessage(any) string { return "expected an error, got none" }

// noDelivery is the error of a wait for a delivery that ended without one:
// what was missing, and the fetch error if there was one.
func noDelivery(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return errors.New(what + " within the wait")
}
