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

// unsureError is an operation of the kit's whose outcome it never learned:
// a publish, a fetch, a settle or a read-back that errored or timed out
// (Jepsen's info). It is no answer of the target's, so a rule it stops is
// unknown with the error's text: never fail, and never a loss. Only a
// definite answer (a topic that is gone, a read that returned without the
// id) counts against the target.
type unsureError struct {
	what string
	err  error
}

func (e *unsureError) Error() string { return e.what + ": " + e.err.Error() }
func (e *unsureError) Unwrap() error { return e.err }

// unsure marks err, if any, as the indeterminate outcome of what.
func unsure(what string, err error) error {
	var u *unsureError
	if err == nil || errors.As(err, &u) {
		return err
	}
	return &unsureError{what: what, err: err}
}

// failed is the judge of a workload that could not do its job: unknown
// when the kit's own set-up failed or an operation's outcome is unknown,
// fail when the target answered wrongly.
func (f *fixture) failed(err error, what string) judge {
	return func(r *spec.R) { f.must(r, err, "%s: %s", f.rule, what) }
}

// must expects err to be nil: a set-up error of the kit's or an
// indeterminate outcome ends the rule unknown with the error's text,
// any other error (a definite answer of the target's) fails it.
func (f *fixture) must(r *spec.R, err error, format string, args ...any) {
	if err == nil {
		return
	}
	what := fmt.Sprintf(format, args...)
	var pe *provenError
	if errors.As(err, &pe) {
		f.proven(r)
	}
	var se *setupError
	if errors.As(err, &se) {
		f.unknown(r, "the kit's own set-up failed (%s), so the rule was not checked: %s: %s", what, se.step, oneLine(se.err.Error()))
	}
	var u *unsureError
	if errors.As(err, &u) {
		f.unknown(r, "%s: the outcome is unknown, not a finding about the target: %s", what, oneLine(err.Error()))
	}
	r.Expect(err).To(succeeded(), "%s", what)
}

// unknown ends the rule unknown; when the kit was paused during the rule
// long enough to explain it (see scale), the reason names the pause first
// (the likelier cause) and the pause is a hazard of the kit's set-up.
func (f *fixture) unknown(r *spec.R, format string, args ...any) {
	f.proven(r) // the kit holds positive evidence: that decides
	why := fmt.Sprintf(format, args...)
	if p, ok := f.paused(r, f.scale()); ok {
		why = p + ": " + why
	}
	r.Unknown("%s", why)
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
// what was missing, and the fetch error if there was one (then the outcome
// is unknown: the kit could not ask).
func noDelivery(what string, err error) error {
	if err != nil {
		return unsure(what, err)
	}
	return errors.New(what + " within the wait")
}
