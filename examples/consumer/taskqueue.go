package consumer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/onceproof/tck/co"
)

// TaskQueue is a consumer that hands its effects to a durable task queue
// inside the delivery and acks: a worker of its own performs them about
// TaskDelay later. The ack means "stored durably, it will happen", which
// the consumer contract allows (an outbox, a task queue, a local log): the
// kit judges effects when they settle, not at the ack.
//
// The queue is a table in a SQLite file of the consumer's own. A task is
// keyed by (message, version, scope), so a redelivery, a replay or a
// second worker enqueues nothing new; it belongs to the worker slot that
// enqueued it first, and that slot's instance runs it, one task at a time.
// After a crash the slot's next instance finds the task still pending and
// runs it. A task this instance did not enqueue itself, or whose send
// failed, may have run before (a crash after the send, before "done"; an
// answer lost), so the notifier is asked first; the index write is the
// conditional, versioned upsert, which changes nothing the second time.
type TaskQueue struct {
	db    *sql.DB
	env   co.Env
	wake  chan struct{}
	mu    sync.Mutex
	fresh map[string]bool // tasks this instance enqueued and has not tried yet
}

// TaskDelay is how long after its delivery a task is run.
const TaskDelay = 50 * time.Millisecond

// TaskQueueDeclared is what it says about itself.
var TaskQueueDeclared = co.Declared{Scopes: []string{co.ScopeIndex, co.ScopeNotify}}

const taskSchema = `
CREATE TABLE IF NOT EXISTS tasks (
	k TEXT PRIMARY KEY, slot TEXT NOT NULL, message TEXT NOT NULL, version INTEGER NOT NULL,
	body TEXT NOT NULL, scope TEXT NOT NULL, due INTEGER NOT NULL, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tasks_pending ON tasks (slot, done, due);`

// NewTaskQueue is the factory: every instance of a rule opens the same
// queue file in dir and starts its worker, which first runs what its slot
// left pending.
func NewTaskQueue(dir string) co.Factory {
	return func(ctx context.Context, env co.Env) (co.Consumer, error) {
		db, err := openDB(ctx, dir, fileName(env.Rule, "tasks"), taskSchema)
		if err != nil {
			return nil, err
		}
		q := &TaskQueue{db: db, env: env, wake: make(chan struct{}, 1), fresh: map[string]bool{}}
		go q.work(ctx)
		return q, nil
	}
}

// Handle stores a task per scope in one transaction, then acks.
func (q *TaskQueue) Handle(ctx context.Context, d co.Delivery) error {
	e := d.Event()
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	due := time.Now().Add(TaskDelay).UnixNano()
	var added []string
	for _, scope := range TaskQueueDeclared.Scopes {
		k := fmt.Sprintf("%s/v%d/%s", e.MessageID, e.Version, scope)
		res, err := tx.ExecContext(ctx, `INSERT INTO tasks (k, slot, message, version, body, scope, due) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(k) DO NOTHING`, k, slotOf(q.env.Worker), e.MessageID, e.Version, e.Body, scope, due)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			added = append(added, k)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	q.mu.Lock()
	for _, k := range added {
		q.fresh[k] = true
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return d.Ack(ctx)
}

// task is one pending effect.
type task struct {
	k, message, body, scope string
	version                 int
	due                     int64
}

// work runs the slot's due tasks until the instance ends.
func (q *TaskQueue) work(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-q.wake:
		}
		tasks, err := q.due(ctx)
		if err != nil {
			continue // the database is busy or the instance is ending: look again
		}
		for _, t := range tasks {
			if wait := time.Until(time.Unix(0, t.due)); wait > 0 {
				break // ordered by due: the rest are later still
			}
			if err := q.run(ctx, t); err != nil {
				if errors.Is(err, co.ErrEnded) || ctx.Err() != nil {
					return
				}
				break // an effect failed: the task stays pending, tried again on a later tick
			}
		}
	}
}

// due lists the slot's pending tasks, soonest first.
func (q *TaskQueue) due(ctx context.Context) ([]task, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT k, message, version, body, scope, due FROM tasks
		WHERE slot = ? AND done = 0 ORDER BY due, k LIMIT 500`, slotOf(q.env.Worker))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []task
	for rows.Next() {
		var t task
		if err := rows.Scan(&t.k, &t.message, &t.version, &t.body, &t.scope, &t.due); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// run performs one task and marks it done.
func (q *TaskQueue) run(ctx context.Context, t task) error {
	q.mu.Lock()
	fresh := q.fresh[t.k]
	delete(q.fresh, t.k) // a second try asks first
	q.mu.Unlock()
	switch t.scope {
	case co.ScopeIndex:
		if _, err := q.env.Index.Upsert(ctx, co.Doc{ID: t.message, Version: t.version, Body: t.body}); err != nil {
			return err
		}
	case co.ScopeNotify:
		sent := 0
		if !fresh {
			n, err := q.env.Notifier.Sent(ctx, t.message, t.version)
			if err != nil {
				return err
			}
			sent = n
		}
		if sent == 0 {
			if err := q.env.Notifier.Send(ctx, co.Notification{MessageID: t.message, Version: t.version, Text: t.body}); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown scope %q", t.scope)
	}
	_, err := q.db.ExecContext(ctx, `UPDATE tasks SET done = 1 WHERE k = ?`, t.k)
	return err
}
