// Package storefault lets the api suite fail the store calls of a service
// the kit runs in its own process (internal/apiservice over the kit's
// SQLite event store): the kit controls that dependency, so API-6.1 can
// make it fail at rates of its choosing and judge what the service answers.
//
// A service registers its Control under its base URL; the suite finds it
// there (For). This is the kit's internal option: no field of api.Target
// carries it, so a service at a URL or an author's own service has none,
// and the rule is not applicable to it, naming that reason.
package storefault

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/onceproof/tck/es"
)

// Kind is how a store call fails.
type Kind string

const (
	// Cancelled: the call's context was cancelled before it ran.
	Cancelled Kind = "cancelled"
	// TimedOut: the call timed out; a write may have taken effect first
	// (its answer was lost), a read did nothing.
	TimedOut Kind = "timed out"
	// Failed: the call returned a plain error (a reset connection) and did
	// nothing.
	Failed Kind = "error"
)

// Err is the error a call failed with kind returns: a cancelled or
// timed-out call's wraps the context's error, as a driver's does.
func (k Kind) Err(op string) error {
	switch k {
	case Cancelled:
		return fmt.Errorf("%s: %w", op, context.Canceled)
	case TimedOut:
		return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %w", op, errReset)
}

var errReset = errors.New("connection reset by peer")

// The store calls a service makes.
const (
	OpAppend = "append"
	OpLoad   = "load"
	OpExists = "request-id query"
)

// Call is one store call of the service.
type Call struct {
	Op  string
	Agg es.AggregateID
}

// Plan decides the store calls of the keys it owns: fail says whether the
// call fails and how; after, for a write, that it runs first and its
// answer is lost (Effect then reports that it took effect). A plan leaves
// the calls of keys it does not own alone.
type Plan interface {
	Take(c Call) (kind Kind, after, fail bool)
	Effect(c Call)
}

// Control is the failure switch of one running service instance.
type Control struct {
	mu    sync.Mutex
	plans []Plan
}

// Arm makes p decide the instance's store calls until the returned
// function is called.
func (c *Control) Arm(p Plan) (disarm func()) {
	c.mu.Lock()
	c.plans = append(c.plans, p)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, q := range c.plans {
			if q == p {
				c.plans = append(c.plans[:i], c.plans[i+1:]...)
				return
			}
		}
	}
}

// Do runs call (do is the real store call) unless an armed plan fails it:
// then do runs only when the plan fails it after its effect.
func (c *Control) Do(ctx context.Context, call Call, do func(context.Context) error) error {
	if c == nil {
		return do(ctx)
	}
	c.mu.Lock()
	plans := append([]Plan(nil), c.plans...)
	c.mu.Unlock()
	for _, p := range plans {
		kind, after, fail := p.Take(call)
		if !fail {
			continue
		}
		if after {
			if err := do(ctx); err != nil {
				return err // it failed by itself: nothing took effect
			}
			p.Effect(call)
		}
		return kind.Err(call.Op)
	}
	return do(ctx)
}

var (
	mu    sync.Mutex
	byURL = map[string]*Control{}
)

func norm(url string) string { return strings.TrimRight(url, "/") }

// Register makes c the control of the service at url until the returned
// function is called.
func Register(url string, c *Control) (unregister func()) {
	url = norm(url)
	mu.Lock()
	byURL[url] = c
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if byURL[url] == c {
			delete(byURL, url)
		}
	}
}

// For is the control of the service at url, nil when the kit controls no
// dependency of it.
func For(url string) *Control {
	mu.Lock()
	defer mu.Unlock()
	return byURL[norm(url)]
}
