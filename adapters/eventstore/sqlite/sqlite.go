// Package sqlite is the embedded event store: SQLite through the pure-Go
// driver modernc.org/sqlite. The three conflicts are raised by the
// database's own constraints inside one transaction:
//
//   - PRIMARY KEY (aggregate, version): a taken version, or a second create;
//   - UNIQUE (aggregate, request_id): a request id the aggregate already holds;
//   - the stream row is inserted only when its predecessor version exists,
//     in the same statement, so no gap can be stored.
//
// Which conflict an error is follows from which constraint SQLite says fired
// (extended result code plus the column list of the failed index), never from
// a check made before the write.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/onceproof/tck/adapters/eventstore/internal/sqlrows"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/leftovers"
)

const schema = `
CREATE TABLE IF NOT EXISTS streams (
	context    TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	request_id TEXT    NOT NULL,
	command_id TEXT    NOT NULL,
	PRIMARY KEY (context, name, tenant, id, version),
	UNIQUE (context, name, tenant, id, request_id)
);
CREATE TABLE IF NOT EXISTS events (
	context    TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	event_name TEXT    NOT NULL,
	body       BLOB    NOT NULL,
	PRIMARY KEY (context, name, tenant, id, version, seq)
);`

// The column lists SQLite names in "UNIQUE constraint failed: ..." for the
// two stream constraints; they identify the constraint that fired.
const (
	versionKey = "streams.context, streams.name, streams.tenant, streams.id, streams.version"
	requestKey = "streams.context, streams.name, streams.tenant, streams.id, streams.request_id"
)

// insertStream stores the stream row only at the initial version or right
// after an existing predecessor: zero rows affected means a gap.
const insertStream = `
INSERT INTO streams (context, name, tenant, id, version, request_id, command_id)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
WHERE ?5 = 1 OR EXISTS (
	SELECT 1 FROM streams
	WHERE context = ?1 AND name = ?2 AND tenant = ?3 AND id = ?4 AND version = ?5 - 1)`

const insertEvent = `
INSERT INTO events (context, name, tenant, id, version, seq, event_name, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

const selectStreams = `
SELECT s.version, s.request_id, s.command_id, e.event_name, e.body
FROM streams s JOIN events e
  ON e.context = s.context AND e.name = s.name AND e.tenant = s.tenant AND e.id = s.id AND e.version = s.version
WHERE s.context = ? AND s.name = ? AND s.tenant = ? AND s.id = ? AND s.version BETWEEN ? AND ?
ORDER BY s.version, e.seq`

const selectRequest = `
SELECT EXISTS (SELECT 1 FROM streams WHERE context = ? AND name = ? AND tenant = ? AND id = ? AND request_id = ?)`

// DB is one SQLite database file. Writes go through a pool of exactly one
// connection, so racing appends queue in Go instead of spinning in SQLite's
// busy handler; reads use their own pool (WAL lets them run beside the
// writer). BEGIN IMMEDIATE and the busy timeout still cover a second
// process writing the same file.
type DB struct {
	w, r *sql.DB
	Path string
}

// Open opens (creating if needed) the database at path, or at the path of a
// sqlite:///abs/path or file:path URL, and creates the schema if absent.
func Open(ctx context.Context, path string) (*DB, error) {
	path = filePath(path)
	if path == "" {
		return nil, fmt.Errorf("sqlite: empty database path")
	}
	params := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", "file:"+path+"?"+params+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	if _, err := w.ExecContext(ctx, schema); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: creating the schema in %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+path+"?"+params+"&_query_only=1")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	return &DB{w: w, r: r, Path: path}, nil
}

// filePath accepts a plain path, sqlite:///path or file:path.
func filePath(s string) string {
	switch {
	case strings.HasPrefix(s, "sqlite://"):
		if u, err := url.Parse(s); err == nil {
			return u.Host + u.Path
		}
	case strings.HasPrefix(s, "file:"):
		p := strings.TrimPrefix(s, "file:")
		p, _, _ = strings.Cut(p, "?")
		return strings.TrimPrefix(p, "//")
	}
	return s
}

// Version is the SQLite library version.
func (db *DB) Version(ctx context.Context) string {
	var v string
	if err := db.r.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}

// Store returns a handle; handles share the database. Closing a handle does
// not close the database.
func (db *DB) Store() *Store { return &Store{db: db} }

// Close closes the database; handles fail afterwards with the driver's
// "database is closed" error.
func (db *DB) Close() error {
	return errors.Join(db.w.Close(), db.r.Close())
}

// handle is embedded under an unexported name: an outside user of Store
// sees its Close and Usable, not a type of the kit's internal/eskit.
type handle = eskit.Handle

// Store is a handle on a DB; it implements es.EventStore.
type Store struct {
	db     *DB
	handle // closed flag; Close (eskit.Handle)
}

var _ es.EventStore = (*Store)(nil)

// Append implements es.EventStore: the stream row and its events in one
// transaction, or nothing.
func (s *Store) Append(ctx context.Context, st es.Stream) (err error) {
	if err := s.Usable(ctx); err != nil {
		return err
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	a := st.Aggregate
	res, err := tx.ExecContext(ctx, insertStream, a.Context, a.Name, a.Tenant, a.ID, st.Version, st.RequestID, st.CommandID)
	if err != nil {
		return conflict(ctx, tx, st, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		// The predecessor version is absent: tail+1 is not st.Version.
		return &es.VersionConflictError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
	}
	for i, e := range st.Events {
		body := e.Body
		if body == nil {
			body = []byte{} // NOT NULL: an empty body is zero bytes, not NULL
		}
		if _, err := tx.ExecContext(ctx, insertEvent, a.Context, a.Name, a.Tenant, a.ID, st.Version, i, e.Name, body); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// conflict maps the error of the stream insert to a typed conflict when, and
// only when, one of the two stream constraints fired; anything else (busy,
// interrupted, closed, cancelled) is returned unchanged.
func conflict(ctx context.Context, tx *sql.Tx, st es.Stream, err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	if se.Code() != sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY && se.Code() != sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		return err
	}
	a := st.Aggregate
	switch failedColumns(se.Error()) {
	case requestKey:
		return &es.DuplicateRequestIDError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
	case versionKey:
		if st.Version != es.InitialVersion {
			return &es.VersionConflictError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
		}
		// The aggregate exists. An exact retry (its request id is already
		// there) is told so, like the reference store; the check runs in the
		// same write transaction, so it sees exactly what the constraint saw.
		var dup bool
		if qerr := tx.QueryRowContext(ctx, selectRequest, a.Context, a.Name, a.Tenant, a.ID, st.RequestID).Scan(&dup); qerr != nil {
			return errors.Join(err, qerr) // undecided: not reported as a conflict
		}
		if dup {
			return &es.DuplicateRequestIDError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
		}
		return &es.DuplicateAggregateIDError{Aggregate: a, RequestID: st.RequestID}
	}
	return err
}

// failedColumns extracts the column list from the driver's message,
// "constraint failed: UNIQUE constraint failed: t.a, t.b (2067)".
func failedColumns(msg string) string {
	const marker = "constraint failed: "
	i := strings.LastIndex(msg, marker)
	if i < 0 {
		return ""
	}
	cols := msg[i+len(marker):]
	if i := strings.LastIndex(cols, " ("); i >= 0 {
		cols = cols[:i]
	}
	return strings.TrimSpace(cols)
}

// Load implements es.EventStore.
func (s *Store) Load(ctx context.Context, agg es.AggregateID, from, to int) ([]es.Stream, error) {
	if err := s.Usable(ctx); err != nil {
		return nil, err
	}
	if err := eskit.ValidateRange(from, to); err != nil {
		return nil, err
	}
	rows, err := s.db.r.QueryContext(ctx, selectStreams, agg.Context, agg.Name, agg.Tenant, agg.ID, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []es.Stream
	for rows.Next() {
		var (
			version            int
			requestID, command string
			e                  es.Event
		)
		if err := rows.Scan(&version, &requestID, &command, &e.Name, &e.Body); err != nil {
			return nil, err
		}
		out = sqlrows.Append(out, agg, version, requestID, command, e)
	}
	return out, rows.Err()
}

// RequestIDExists implements es.EventStore; it reads committed data only.
func (s *Store) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if err := s.Usable(ctx); err != nil {
		return false, err
	}
	var ok bool
	err := s.db.r.QueryRowContext(ctx, selectRequest, agg.Context, agg.Name, agg.Tenant, agg.ID, requestID).Scan(&ok)
	return ok, err
}

// String names the adapter in reports.
func (s *Store) String() string { return "sqlite event store " + s.db.Path }

// OpenTemp opens a fresh database in a new temporary directory; stop closes
// it and removes the directory (database, WAL and shared-memory files).
//
// The directory is registered with internal/leftovers before it exists, so
// an interrupted or failed run removes it too.
func OpenTemp(ctx context.Context) (db *DB, stop func() error, err error) {
	var dir string
	var untrack func()
	err = leftovers.Create(func() error {
		d, err := leftovers.MkdirTemp("tck-sqlite-*")
		if err != nil {
			return err
		}
		dir = d
		untrack = leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	rmDir := func() error {
		err := os.RemoveAll(dir)
		if err == nil {
			untrack()
		}
		return err
	}
	db, err = Open(ctx, filepath.Join(dir, "events.db"))
	if err != nil {
		_ = rmDir()
		return nil, nil, err
	}
	return db, func() error { return errors.Join(db.Close(), rmDir()) }, nil
}

// OpenFile opens the database at path (or URL) like Open, returning its
// Close as stop, the shape of OpenTemp; the file is kept.
func OpenFile(ctx context.Context, path string) (*DB, func() error, error) {
	db, err := Open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	return db, db.Close, nil
}
