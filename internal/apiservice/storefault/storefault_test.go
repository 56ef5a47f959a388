package storefault

import (
	"context"
	"errors"
	"testing"

	"github.com/onceproof/tck/es"
)

// plan fails every call of one id with kind, after its effect if after.
type plan struct {
	id     string
	kind   Kind
	after  bool
	effect int
}

func (p *plan) Take(c Call) (Kind, bool, bool) { return p.kind, p.after, c.Agg.ID == p.id }
func (p *plan) Effect(Call)                    { p.effect++ }

// A failed call does nothing, unless it fails after its effect: then it
// runs, and the plan hears that it took effect; a call that fails by
// itself returns its own error and took no effect. Calls of other ids and
// calls after the disarm run. Each kind is the error a driver returns.
func TestDo(t *testing.T) {
	ctx := context.Background()
	mine, other := Call{Op: OpAppend, Agg: es.AggregateID{ID: "k"}}, Call{Op: OpAppend, Agg: es.AggregateID{ID: "x"}}
	for _, tc := range []struct {
		kind      Kind
		after     bool
		callErr   error
		ran, eff  int
		wantIs    error
		wantPlain bool
	}{
		{kind: Cancelled, wantIs: context.Canceled},
		{kind: TimedOut, after: true, ran: 1, eff: 1, wantIs: context.DeadlineExceeded},
		{kind: Failed, wantPlain: true},
		{kind: TimedOut, after: true, callErr: es.ErrConflict, ran: 1, wantIs: es.ErrConflict},
	} {
		var c Control
		p := &plan{id: "k", kind: tc.kind, after: tc.after}
		disarm := c.Arm(p)
		ran := 0
		err := c.Do(ctx, mine, func(context.Context) error { ran++; return tc.callErr })
		if ran != tc.ran || p.effect != tc.eff {
			t.Errorf("%s after=%v: the call ran %d times, effect %d; want %d, %d", tc.kind, tc.after, ran, p.effect, tc.ran, tc.eff)
		}
		switch {
		case tc.wantIs != nil && !errors.Is(err, tc.wantIs):
			t.Errorf("%s: %v, want %v", tc.kind, err, tc.wantIs)
		case tc.wantPlain && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			t.Errorf("%s: %v, want a plain error", tc.kind, err)
		}
		if err := c.Do(ctx, other, func(context.Context) error { return nil }); err != nil {
			t.Errorf("another id's call failed: %v", err)
		}
		disarm()
		if err := c.Do(ctx, mine, func(context.Context) error { return nil }); err != nil {
			t.Errorf("a call after the disarm failed: %v", err)
		}
	}
}

// A control is found under its service's URL until it is unregistered.
func TestRegister(t *testing.T) {
	c := &Control{}
	unregister := Register("http://127.0.0.1:1234/", c)
	if For("http://127.0.0.1:1234") != c {
		t.Fatal("the control is not found under its URL")
	}
	unregister()
	if For("http://127.0.0.1:1234") != nil {
		t.Fatal("the control is found after it was unregistered")
	}
}
