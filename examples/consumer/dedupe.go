package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/onceproof/tck/co"
)

// SQLiteDedupe is a consumer that keeps its de-dupe records in a SQLite
// file of its own (not the kit's env.Store), and does both effects, the
// search index and the notification, before it acks.
//
// One record per (message, version, scope), claimed with an atomic insert
// by the instance that does the effect, marked done after it. A claim of a
// live instance is left to it (nak: come back later); a claim of an
// instance that is gone is taken over, and the notifier is asked first
// whether the notification went out (a crash between the send and the
// mark). Which instance is live is the database's answer, not a clock's:
// every instance registers itself under its worker slot when it starts, so
// a claim whose owner is no longer its slot's instance belongs to one that
// crashed. A slow instance keeps its claims, however long it is starved.
//
// The index write is the index's conditional, versioned upsert: doing it
// again changes nothing, and an older version never overwrites a newer one.
type SQLiteDedupe struct {
	db  *sql.DB
	env co.Env
}

// SQLiteDedupeDeclared is what it says about itself: both scopes, records
// kept for ever.
var SQLiteDedupeDeclared = co.Declared{Scopes: []string{co.ScopeIndex, co.ScopeNotify}}

const dedupeSchema = `
CREATE TABLE IF NOT EXISTS dedupe (k TEXT PRIMARY KEY, owner TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS instances (slot TEXT PRIMARY KEY, instance TEXT NOT NULL);`

// NewSQLiteDedupe is the factory: every instance of a rule opens the same
// file in dir, so the records survive the kit's crashes and restarts.
func NewSQLiteDedupe(dir string) co.Factory {
	return func(ctx context.Context, env co.Env) (co.Consumer, error) {
		db, err := openDB(ctx, dir, fileName(env.Rule, "dedupe"), dedupeSchema)
		if err != nil {
			return nil, err
		}
		// From now on the slot's earlier instances are gone: their claims
		// may be taken over.
		if _, err := db.ExecContext(ctx, `INSERT INTO instances (slot, instance) VALUES (?, ?)
			ON CONFLICT(slot) DO UPDATE SET instance = excluded.instance`, slotOf(env.Worker), env.Worker); err != nil {
			return nil, err
		}
		return &SQLiteDedupe{db: db, env: env}, nil
	}
}

// Handle does each scope at most once, then acks.
func (c *SQLiteDedupe) Handle(ctx context.Context, d co.Delivery) error {
	e := d.Event()
	for _, scope := range SQLiteDedupeDeclared.Scopes {
		busy, err := c.once(ctx, e, scope)
		if err != nil {
			return fmt.Errorf("%s %s: %w", e.EventID, scope, err)
		}
		if busy {
			// Another live instance is on it: let it finish, look again later.
			return d.Nak(ctx, 30*time.Second)
		}
	}
	return d.Ack(ctx)
}

// errBusy: another live instance holds the claim.
var errBusy = errors.New("claimed by a live instance")

// once does the effect of (e, scope) unless its record says it is done.
func (c *SQLiteDedupe) once(ctx context.Context, e co.Event, scope string) (busy bool, err error) {
	key := fmt.Sprintf("%s/v%d/%s", e.MessageID, e.Version, scope)
	me := c.env.Worker
	res, err := c.db.ExecContext(ctx, `INSERT INTO dedupe (k, owner) VALUES (?, ?) ON CONFLICT(k) DO NOTHING`, key, me)
	if err != nil {
		return false, err
	}
	fresh, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if fresh == 0 {
		switch err := c.takeOver(ctx, key); {
		case errors.Is(err, errDone):
			return false, nil
		case errors.Is(err, errBusy):
			return true, nil
		case err != nil:
			return false, err
		}
	}
	if err := c.effect(ctx, e, scope, fresh == 0); err != nil {
		// Free the claim: the redelivery takes it over, and asks first.
		_, _ = c.db.ExecContext(context.WithoutCancel(ctx), `UPDATE dedupe SET owner = '' WHERE k = ? AND owner = ? AND done = 0`, key, me)
		return false, err
	}
	res, err = c.db.ExecContext(ctx, `UPDATE dedupe SET done = 1 WHERE k = ? AND owner = ?`, key, me)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, fmt.Errorf("the claim of %s was taken over (this instance is gone): %v", key, err)
	}
	return false, nil
}

// errDone: the record says the effect is done.
var errDone = errors.New("done")

// takeOver claims key from an instance that is gone (or from nobody, after
// a failed effect); errDone and errBusy say why it did not.
func (c *SQLiteDedupe) takeOver(ctx context.Context, key string) error {
	var owner, live string
	var done bool
	if err := c.db.QueryRowContext(ctx, `SELECT owner, done FROM dedupe WHERE k = ?`, key).Scan(&owner, &done); err != nil {
		return err
	}
	if done {
		return errDone
	}
	if owner != "" && owner != c.env.Worker {
		if err := c.db.QueryRowContext(ctx, `SELECT instance FROM instances WHERE slot = ?`, slotOf(owner)).Scan(&live); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if live == owner {
			return errBusy
		}
	}
	// owner is gone, or this instance's own earlier attempt (it handles one
	// delivery at a time), or nobody's: take it, if no one took it first.
	res, err := c.db.ExecContext(ctx, `UPDATE dedupe SET owner = ? WHERE k = ? AND owner = ? AND done = 0`, c.env.Worker, key, owner)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errBusy // someone else took it meanwhile: look again later
	}
	return nil
}

// effect does the scope's effect; after a take-over the notifier is asked
// first whether it went out already.
func (c *SQLiteDedupe) effect(ctx context.Context, e co.Event, scope string, takenOver bool) error {
	if scope == co.ScopeIndex {
		_, err := c.env.Index.Upsert(ctx, co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body})
		return err
	}
	if takenOver {
		n, err := c.env.Notifier.Sent(ctx, e.MessageID, e.Version)
		if err != nil || n > 0 {
			return err
		}
	}
	return c.env.Notifier.Send(ctx, co.Notification{MessageID: e.MessageID, Version: e.Version, Text: e.Body})
}
