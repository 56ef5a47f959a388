// Package outbox is the kit's reference transactional outbox (seed 002, 七):
// the writer commits the business row and a pending-event row in one local
// SQLite transaction, and the relay publishes pending rows to the broker
// under their stable event id, marking each sent only after the broker
// acknowledged it. A crash anywhere between the commit and the mark leaves
// the row pending, so the next relay publishes it again under the same id:
// the broker's de-dupe window or the consumer's de-dupe absorbs the copy.
// A rolled-back transaction leaves no row, so nothing is published for it.
package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sqlstore"
)

// Schema is the local database of the writer and the relay.
const Schema = `
CREATE TABLE IF NOT EXISTS messages (id TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (id, version));
CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, payload BLOB NOT NULL, sent INTEGER NOT NULL DEFAULT 0);
`

// Open opens (creating if needed) the local database at path.
func Open(path string) (*sql.DB, error) {
	db, err := sqlstore.OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(Schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("outbox schema: %w", err)
	}
	return db, nil
}

// Outbox is one process's writer and relay on the local database.
type Outbox struct {
	DB    *sql.DB
	pub   co.Publisher
	topic string
}

// New opens the outbox at path, relaying to topic through pub.
func New(path string, pub co.Publisher, topic string) (*Outbox, error) {
	db, err := Open(path)
	if err != nil {
		return nil, err
	}
	return &Outbox{DB: db, pub: pub, topic: topic}, nil
}

// Factory is the reference outbox as the consumer suite opens it.
func Factory(ctx context.Context, path string, pub co.Publisher, topic string) (co.OutboxWriter, co.OutboxRelay, func() error, error) {
	o, err := New(path, pub, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	return o, o, o.Close, nil
}

// Close releases the handle; the file stays.
func (o *Outbox) Close() error { return o.DB.Close() }

// Submit writes the business row and the pending event in one transaction.
func (o *Outbox) Submit(ctx context.Context, e co.Event, inTx func() error) error {
	payload, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tx, err := o.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, version, body) VALUES (?, ?, ?)`, e.MessageID, e.Version, e.Body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (event_id, payload) VALUES (?, ?)`, e.EventID, payload); err != nil {
		return err
	}
	if inTx != nil {
		if err := inTx(); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Pending is one row still to publish.
type Pending struct {
	Seq     int64
	EventID string
	Payload []byte
}

// PendingRows lists the unsent rows in commit order.
func PendingRows(ctx context.Context, db *sql.DB) ([]Pending, error) {
	rows, err := db.QueryContext(ctx, `SELECT seq, event_id, payload FROM outbox WHERE sent = 0 ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		var p Pending
		if err := rows.Scan(&p.Seq, &p.EventID, &p.Payload); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// MarkSent marks one row sent.
func MarkSent(ctx context.Context, db *sql.DB, seq int64) error {
	_, err := db.ExecContext(ctx, `UPDATE outbox SET sent = 1 WHERE seq = ?`, seq)
	return err
}

// EventOf decodes a pending row's event. The relay publishes it under the stable event id
// as the broker message id, so a second publish of the same row is the same
// message to the broker's de-dupe and to the consumer's.
func EventOf(p Pending) co.Event {
	var e co.Event
	_ = json.Unmarshal(p.Payload, &e)
	return e
}

// RelayOnce publishes every pending row, then marks it sent.
func (o *Outbox) RelayOnce(ctx context.Context) (int, error) {
	rows, err := PendingRows(ctx, o.DB)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range rows {
		if _, err := o.pub.Publish(ctx, o.topic, co.Message(EventOf(p), p.EventID)); err != nil {
			return n, err // stays pending: the next relay tries again
		}
		if err := MarkSent(ctx, o.DB, p.Seq); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
