package gen

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// Model is a sequential specification: the state before any call, and the
// states a call can lead to given what it returned. Step returns no state
// when the output is impossible from s; more than one when the output leaves
// the effect open (an error that may or may not have taken effect).
type Model[S, I, O any] struct {
	Init func() S
	Step func(s S, in I, out O) []S
	// Key partitions calls into independent parts (one aggregate, one
	// key); nil: one part.
	Key func(in I) string
	// Equal compares states (nil: their %v forms).
	Equal func(a, b S) bool
	// Describe renders a call for a report (nil: %v).
	Describe func(in I, out O) string
	// Pending reports a call whose effect is open (no answer, an
	// indeterminate error). Check lets its effect land at any time after
	// it was called, even after every other call returned: a request the
	// kit stopped waiting for, or whose server it killed, may still be
	// carried out later (a transaction committing after its client gave
	// up, a durable queue's hand-off). Nil: none is.
	Pending func(in I, out O) bool
}

// Verdict is the result of a check.
type Verdict int

const (
	Linearizable Verdict = iota // some order of the calls, consistent with their times, satisfies the model
	Violation                   // no such order
	Undecided                   // the checker ran out of time
)

func (v Verdict) String() string {
	return [...]string{"linearizable", "not linearizable", "undecided"}[v]
}

// CheckSequential steps the model through calls in order (they did not
// overlap) and returns the index of the first call the model does not
// allow, or -1.
func CheckSequential[S, I, O any](m Model[S, I, O], calls []Call[I, O]) int {
	states := map[string][]S{}
	key := func(in I) string {
		if m.Key == nil {
			return ""
		}
		return m.Key(in)
	}
	for i, c := range calls {
		k := key(c.Input)
		cur, ok := states[k]
		if !ok {
			cur = []S{m.Init()}
		}
		var next []S
		for _, s := range cur {
			next = append(next, m.Step(s, c.Input, c.Output)...)
		}
		if len(next) == 0 {
			return i
		}
		states[k] = next
	}
	return -1
}

// Check decides whether calls, which may overlap in time, are linearizable
// with respect to m, with porcupine; timeout bounds the search (Undecided
// beyond it).
func Check[S, I, O any](m Model[S, I, O], calls []Call[I, O], timeout time.Duration) Verdict {
	ops := make([]porcupine.Operation, len(calls))
	var end int64
	for _, c := range calls {
		end = max(end, int64(c.Return))
	}
	for i, c := range calls {
		ret := int64(c.Return)
		if m.Pending != nil && m.Pending(c.Input, c.Output) {
			ret = end + 1
		}
		ops[i] = porcupine.Operation{ClientId: c.Client, Input: c.Input, Output: c.Output, Call: int64(c.Call), Return: ret}
	}
	equal := m.Equal
	if equal == nil {
		equal = func(a, b S) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	}
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{m.Init()} },
		Step: func(state, in, out any) []any {
			var next []any
			for _, s := range m.Step(state.(S), in.(I), out.(O)) {
				next = append(next, s)
			}
			return next
		},
		Equal: func(a, b any) bool { return equal(a.(S), b.(S)) },
		DescribeOperation: func(in, out any) string {
			if m.Describe != nil {
				return m.Describe(in.(I), out.(O))
			}
			return fmt.Sprintf("%v -> %v", in, out)
		},
	}
	if m.Key != nil {
		nm.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
			parts := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				k := m.Key(op.Input.(I))
				if _, ok := parts[k]; !ok {
					order = append(order, k)
				}
				parts[k] = append(parts[k], op)
			}
			out := make([][]porcupine.Operation, len(order))
			for i, k := range order {
				out[i] = parts[k]
			}
			return out
		}
	}
	switch porcupine.CheckOperationsTimeout(nm.ToModel(), ops, timeout) {
	case porcupine.Ok:
		return Linearizable
	case porcupine.Illegal:
		return Violation
	}
	return Undecided
}
