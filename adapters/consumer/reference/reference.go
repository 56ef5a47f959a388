// Package reference is the consumer/reference target: a consumer that keeps
// every (message, version, scope) effect exactly once across redeliveries,
// edits, stale replays, two workers and crashes at any point.
//
// Its design, scope by scope:
//
//  1. claim the de-dupe key (message id, version, scope) in the durable store
//     with one atomic insert-if-absent, holding a lease on the kit's clock;
//     a key already "done" is skipped, a live claim of another worker is
//     left to it (nak, come back later);
//  2. a claim whose lease ran out belongs to an instance that died between
//     its claim and its "done": take it over with a compare-and-swap and
//     first ask the sink whether the effect is already there (the notifier
//     answers by key; the index by version), so a crash between the effect
//     and the record makes no second effect;
//  3. renew the claim (compare-and-swap of its own claim, so a worker
//     starved past its lease and taken over does not go on), then do the
//     effect: the index through its conditional, versioned upsert
//     (which converges on its own and never lets an older version win), the
//     notifier with one send;
//  4. mark the key "done", and ack only after every scope is done.
//
// Records never expire, so the de-dupe horizon covers any redelivery.
//
// Design is the same consumer with its deliberate weaknesses as switches;
// package mutants flips them one at a time.
package reference

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/co"
)

// Design describes one consumer. The zero switches are the reference.
type Design struct {
	// Key is the de-dupe key of (event, scope).
	Key func(e co.Event, scope string) string
	// Lifetime of a de-dupe record on the kit's clock (0: forever).
	Lifetime time.Duration
	// Lease of a claim on the kit's clock.
	Lease time.Duration

	AckFirst       bool // ack before the effects
	CheckThenWrite bool // read the record, do the effect, then write the record: no claim, no recovery
	PlainPut       bool // index scope: an unconditional put and no record
	Memory         bool // de-dupe records in the instance's memory

	GuardedPut       bool // index scope: an unconditional put, guarded by the claim and record
	ReadCompareWrite bool // index scope: read the document, compare versions, then an unconditional put
	IgnoreEffectErr  bool // an effect that failed is counted as done: marked and acked
	ReleaseOnError   bool // an effect that failed releases its claim, so the redelivery does it again blindly
	MarkFirst        bool // the record is written "done" first (no claim), then the effect
	RacyClaim        bool // the claim is a read of the record then a write of it: not atomic

	DayKeyed       bool // the de-dupe key also names the calendar day (kit clock) it was written on
	UndoOnAckErr   bool // an ack that returns an error rolls the delivery back: its de-dupe records are deleted
	TextVersions   bool // index scope: skips an event whose version is not above the newest seen, compared as text
	AnyVersionSent bool // a take-over asks "is any version of the message there?" instead of "this version?"
	Cap            int  // >0: an instance keeps at most Cap de-dupe records, deleting its oldest beyond that
	// GiveUpAfter >0: a failed effect call is tried again in the same
	// delivery, and after GiveUpAfter failures the effect is given up:
	// marked done and acked, never done.
	GiveUpAfter int
	// ErrAsMiss: a de-dupe read that fails is taken for "no record" (as if
	// it had expired between the claim and the read): the key is claimed
	// with a put and the effect done, also when the record said "done".
	ErrAsMiss bool
	// LRU >0: the de-dupe store (shared by every instance, as a cache
	// server is) keeps at most LRU keys, evicting the least recently used.
	LRU int
}

// Key is the reference de-dupe key: (message id, version, scope).
func Key(e co.Event, scope string) string {
	return fmt.Sprintf("dedupe/%s/v%d/%s", e.MessageID, e.Version, scope)
}

// Reference returns the correct design.
func Reference() Design {
	// The lease is twice the broker's ack wait in the kit's default timing:
	// long enough that a live worker slowed by a busy machine keeps its
	// claim, short enough that a dead one's claim is taken over soon.
	return Design{Key: Key, Lease: 4 * time.Minute}
}

// Scopes are the scopes every design performs, in order.
var Scopes = []string{co.ScopeIndex, co.ScopeNotify}

// Declared is what the design declares to the kit.
func (d Design) Declared() co.Declared {
	return co.Declared{Scopes: Scopes, DedupeLifetime: d.Lifetime}
}

// Factory builds instances of the design.
func (d Design) Factory() co.Factory {
	if d.Key == nil {
		d.Key = Key
	}
	if d.Lease <= 0 {
		d.Lease = 4 * time.Minute
	}
	stores := lruStores{cap: d.LRU, by: map[string]*lru{}}
	return func(ctx context.Context, env co.Env) (co.Consumer, error) {
		return &instance{d: d, env: env, mem: map[string]bool{}, lru: stores.of(env.Rule)}, nil
	}
}

type instance struct {
	d    Design
	env  co.Env
	mem  map[string]bool // only the Memory design uses it; it dies with the instance
	kept []string        // only the Cap design: the records it wrote, oldest first
	lru  *lru            // only the LRU design: the store's keys, shared by the instances
}

// key is the de-dupe key of (e, scope) under the design.
func (c *instance) key(e co.Event, scope string) string {
	k := c.d.Key(e, scope)
	if c.d.DayKeyed {
		k += "/" + c.env.Clock.Now().UTC().Format("2006-01-02")
	}
	return k
}

// done marks key done; the Cap design then forgets its oldest records.
func (c *instance) markDone(ctx context.Context, key string) error {
	if err := c.env.Store.Put(ctx, key, done, c.d.Lifetime); err != nil {
		return err
	}
	for _, k := range c.lru.use(key) {
		_ = c.env.Store.Delete(ctx, k)
	}
	if c.d.Cap > 0 {
		c.kept = append(c.kept, key)
		for len(c.kept) > c.d.Cap {
			_ = c.env.Store.Delete(ctx, c.kept[0])
			c.kept = c.kept[1:]
		}
	}
	return nil
}

const done = "done"

// Handle implements co.Consumer.
func (c *instance) Handle(ctx context.Context, d co.Delivery) error {
	e := d.Event()
	if c.d.AckFirst {
		if err := d.Ack(ctx); err != nil {
			return err
		}
	}
	for _, scope := range Scopes {
		busy, err := c.apply(ctx, e, scope)
		if err != nil {
			return fmt.Errorf("%s %s: %w", e.EventID, scope, err)
		}
		if busy {
			// Another worker holds the claim: let it finish, look again later.
			return d.Nak(ctx, c.d.Lease/4)
		}
	}
	if c.d.AckFirst {
		return nil
	}
	err := d.Ack(ctx)
	if err != nil && c.d.UndoOnAckErr && !errors.Is(err, co.ErrEnded) {
		for _, scope := range Scopes {
			_ = c.env.Store.Delete(ctx, c.key(e, scope))
		}
	}
	return err
}

func doc(e co.Event) co.Doc {
	return co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body}
}

func (c *instance) effect(ctx context.Context, e co.Event, scope string) error {
	switch scope {
	case co.ScopeIndex:
		switch {
		case c.d.PlainPut, c.d.GuardedPut:
			return c.env.Index.Put(ctx, doc(e))
		case c.d.ReadCompareWrite:
			cur, ok, err := c.env.Index.Get(ctx, e.MessageID)
			if err != nil || (ok && cur.Version >= e.Version) {
				return err
			}
			return c.env.Index.Put(ctx, doc(e))
		}
		if c.d.TextVersions {
			return c.textUpsert(ctx, e)
		}
		_, err := c.env.Index.Upsert(ctx, doc(e))
		return err
	case co.ScopeNotify:
		return c.env.Notifier.Send(ctx, co.Notification{MessageID: e.MessageID, Version: e.Version, Text: e.Body})
	}
	return fmt.Errorf("unknown scope %q", scope)
}

// present asks the sink whether the effect of (e, scope) is already there.
func (c *instance) present(ctx context.Context, e co.Event, scope string) (bool, error) {
	switch scope {
	case co.ScopeIndex:
		cur, ok, err := c.env.Index.Get(ctx, e.MessageID)
		if c.d.AnyVersionSent {
			return ok, err
		}
		return ok && cur.Version >= e.Version, err
	case co.ScopeNotify:
		n, err := c.env.Notifier.Sent(ctx, e.MessageID, e.Version)
		if c.d.AnyVersionSent && err == nil && n == 0 && e.Version > 1 {
			n, err = c.env.Notifier.Sent(ctx, e.MessageID, e.Version-1)
		}
		return n > 0, err
	}
	return false, fmt.Errorf("unknown scope %q", scope)
}

// apply performs one scope of e at most once; busy means another live
// worker holds it.
func (c *instance) apply(ctx context.Context, e co.Event, scope string) (busy bool, err error) {
	if scope == co.ScopeIndex && c.d.PlainPut {
		return false, c.effect(ctx, e, scope)
	}
	key := c.key(e, scope)
	if c.d.Memory {
		if c.mem[key] {
			return false, nil
		}
		if err := c.effect(ctx, e, scope); err != nil {
			return false, err
		}
		c.mem[key] = true
		return false, nil
	}
	if c.d.CheckThenWrite {
		rec, ok, err := c.env.Store.Get(ctx, key)
		if err != nil || (ok && rec.Value == done) {
			return false, err
		}
		if err := c.effect(ctx, e, scope); err != nil {
			return false, err
		}
		return false, c.markDone(ctx, key)
	}

	if c.d.MarkFirst {
		ok, err := c.env.Store.Insert(ctx, key, done, c.d.Lifetime)
		if err != nil || !ok {
			return false, err
		}
		return false, c.effect(ctx, e, scope)
	}

	claim := c.claim()
	var ok bool
	if c.d.RacyClaim {
		ok, err = c.racyClaim(ctx, key, claim)
	} else {
		ok, err = c.env.Store.Insert(ctx, key, claim, c.d.Lifetime)
	}
	if err != nil {
		return false, err
	}
	recovering := false
	if !ok {
		rec, found, err := c.env.Store.Get(ctx, key)
		if err != nil && !c.d.ErrAsMiss {
			return false, err
		}
		switch {
		case !found && c.d.ErrAsMiss:
			// The ErrAsMiss design: no record (or no answer) means it
			// expired between the two calls, so the key is free: claim it.
			if err := c.env.Store.Put(ctx, key, claim, c.d.Lifetime); err != nil {
				return false, err
			}
		case !found:
			return true, nil // expired between the two calls: try again later
		case rec.Value == done:
			c.lru.use(key) // a hit makes the key the most recently used
			return false, nil
		case c.live(rec.Value):
			return true, nil
		default:
			swapped, err := c.env.Store.CompareAndSwap(ctx, key, rec.Value, claim, c.d.Lifetime)
			if err != nil || !swapped {
				return !swapped, err
			}
			recovering = true
		}
	}
	skip := false
	if recovering {
		if skip, err = c.present(ctx, e, scope); err != nil {
			return false, err
		}
	}
	if !skip && !c.d.RacyClaim {
		// Renew the claim just before the effect: a live worker starved
		// past its lease (a busy machine; the kit's clock runs 1200 times
		// faster than real time) may have lost it to a take-over, which
		// does the effect itself; sending anyway would be a second one.
		// (The racy-claim design checks nothing after its claim.)
		held, err := c.hold(ctx, key, claim)
		if err != nil || !held {
			return !held, err
		}
	}
	if !skip {
		if err := c.tryEffect(ctx, e, scope); err != nil && !c.d.IgnoreEffectErr {
			if c.d.ReleaseOnError {
				_ = c.env.Store.Delete(ctx, key)
			}
			return false, err
		}
	}
	return false, c.markDone(ctx, key)
}

// hold renews this worker's claim on key (claim, its current value) and
// says whether the worker still holds it once the renewal has returned: a
// store call slower than the lease (a busy disk) writes a claim that has
// run out already, which another worker may take over at once, so the
// renewal is repeated until one returns inside its own lease.
func (c *instance) hold(ctx context.Context, key, claim string) (bool, error) {
	for range 5 {
		fresh := c.claim()
		held, err := c.env.Store.CompareAndSwap(ctx, key, claim, fresh, c.d.Lifetime)
		if err != nil || !held {
			return false, err
		}
		if c.live(fresh) {
			return true, nil
		}
		claim = fresh
	}
	return false, nil // still ours until it runs out; a redelivery tries again
}

// textUpsert keeps the newest version of the message in its own record
// as text and skips an event whose version does not sort above it: "10"
// sorts before "9".
func (c *instance) textUpsert(ctx context.Context, e co.Event) error {
	key := "newest/" + e.MessageID
	v := strconv.Itoa(e.Version)
	rec, ok, err := c.env.Store.Get(ctx, key)
	if err != nil || (ok && rec.Value >= v) {
		return err
	}
	if _, err := c.env.Index.Upsert(ctx, doc(e)); err != nil {
		return err
	}
	return c.env.Store.Put(ctx, key, v, 0)
}

// racyClaim claims key by reading it and, if absent, writing the claim: two
// workers can both read "absent" and both claim.
func (c *instance) racyClaim(ctx context.Context, key, claim string) (bool, error) {
	_, found, err := c.env.Store.Get(ctx, key)
	if err != nil || found {
		return false, err
	}
	return true, c.env.Store.Put(ctx, key, claim, c.d.Lifetime)
}

// A claim is "pending WORKER UNTIL" with UNTIL in Unix nanoseconds of the
// kit's clock.
func (c *instance) claim() string {
	return fmt.Sprintf("pending %s %d", c.env.Worker, c.env.Clock.Now().Add(c.d.Lease).UnixNano())
}

func (c *instance) live(v string) bool {
	f := strings.Fields(v)
	if len(f) != 3 || f[0] != "pending" {
		return false
	}
	until, err := strconv.ParseInt(f[2], 10, 64)
	return err == nil && c.env.Clock.Now().UnixNano() < until
}

// tryEffect does the effect; the GiveUpAfter design tries a failed call
// again in the same delivery, asking the sink first whether the failed call
// took effect (its answer may only have been lost), and gives the effect up
// after GiveUpAfter failures.
func (c *instance) tryEffect(ctx context.Context, e co.Event, scope string) error {
	err := c.effect(ctx, e, scope)
	for failures := 1; err != nil && c.d.GiveUpAfter > 0; failures++ {
		if errors.Is(err, co.ErrEnded) || ctx.Err() != nil {
			return err
		}
		if failures >= c.d.GiveUpAfter {
			return nil // given up: counted as done
		}
		there, perr := c.present(ctx, e, scope)
		if perr != nil {
			return perr
		}
		if there {
			return nil
		}
		err = c.effect(ctx, e, scope)
	}
	return err
}
