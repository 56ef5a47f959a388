// Package postgres is the PostgreSQL event store, through pgx v5. The three
// conflicts are raised by named constraints of the database itself:
//
//   - streams_aggregate_version (PRIMARY KEY): a taken version, or a second
//     create of an existing aggregate;
//   - streams_aggregate_request (UNIQUE): a request id the aggregate holds;
//   - the stream row is inserted only when its predecessor version exists,
//     in the same statement, so no gap can be stored.
//
// The stream row and its events are written by one statement, which
// PostgreSQL runs atomically. A unique violation (SQLSTATE 23505) is mapped to
// a typed conflict by its constraint name; every other error is returned
// unchanged. Everything the adapter creates lives in its own schema,
// onceproof_tck; nothing else in the database is touched.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceproof/tck/adapters/eventstore/internal/sqlrows"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/redact"
)

// Schema is the PostgreSQL schema holding the adapter's tables.
const Schema = "onceproof_tck"

// The constraint names the error mapping relies on.
const (
	VersionConstraint = "streams_aggregate_version"
	RequestConstraint = "streams_aggregate_request"
)

const ddl = `
CREATE SCHEMA IF NOT EXISTS onceproof_tck;
CREATE TABLE IF NOT EXISTS onceproof_tck.streams (
	context    text    NOT NULL,
	name       text    NOT NULL,
	tenant     text    NOT NULL,
	id         text    NOT NULL,
	version    integer NOT NULL,
	request_id text    NOT NULL,
	command_id text    NOT NULL,
	CONSTRAINT streams_aggregate_version PRIMARY KEY (context, name, tenant, id, version),
	CONSTRAINT streams_aggregate_request UNIQUE (context, name, tenant, id, request_id)
);
CREATE TABLE IF NOT EXISTS onceproof_tck.events (
	context    text    NOT NULL,
	name       text    NOT NULL,
	tenant     text    NOT NULL,
	id         text    NOT NULL,
	version    integer NOT NULL,
	seq        integer NOT NULL,
	event_name text    NOT NULL,
	body       bytea   NOT NULL,
	CONSTRAINT events_stream_seq PRIMARY KEY (context, name, tenant, id, version, seq),
	CONSTRAINT events_stream FOREIGN KEY (context, name, tenant, id, version)
		REFERENCES onceproof_tck.streams (context, name, tenant, id, version)
);`

// appendStream inserts the stream row (only at the initial version or right
// after an existing predecessor) and, from what that insert returned, its
// events: zero rows affected means the stream row was not inserted, a gap.
const appendStream = `
WITH s AS (
	INSERT INTO onceproof_tck.streams (context, name, tenant, id, version, request_id, command_id)
	SELECT $1::text, $2::text, $3::text, $4::text, $5::integer, $6::text, $7::text
	WHERE $5::integer = 1 OR EXISTS (
		SELECT 1 FROM onceproof_tck.streams
		WHERE context = $1 AND name = $2 AND tenant = $3 AND id = $4 AND version = $5::integer - 1)
	RETURNING context, name, tenant, id, version
)
INSERT INTO onceproof_tck.events (context, name, tenant, id, version, seq, event_name, body)
SELECT s.context, s.name, s.tenant, s.id, s.version, e.seq, e.event_name, e.body
FROM s, unnest($8::text[], $9::bytea[]) WITH ORDINALITY AS e(event_name, body, seq)`

const selectStreams = `
SELECT s.version, s.request_id, s.command_id, e.event_name, e.body
FROM onceproof_tck.streams s JOIN onceproof_tck.events e USING (context, name, tenant, id, version)
WHERE s.context = $1 AND s.name = $2 AND s.tenant = $3 AND s.id = $4 AND s.version BETWEEN $5 AND $6
ORDER BY s.version, e.seq`

const selectRequest = `
SELECT EXISTS (SELECT 1 FROM onceproof_tck.streams
	WHERE context = $1 AND name = $2 AND tenant = $3 AND id = $4 AND request_id = $5)`

// ConnectTimeout bounds the first connection when the URL sets none, so an
// unreachable server fails Open in seconds.
const ConnectTimeout = 5 * time.Second

// PoolConnectTimeout bounds each later connection of the pool when the URL
// sets none: a pool that grows on a loaded host (SCRAM authentication
// beside CPU burners took over 5 s) must not fail a valid append.
const PoolConnectTimeout = 30 * time.Second

// MaxConns is the pool size when the URL sets no pool_max_conns.
const MaxConns = 16

// DB is a connection pool on one database with the adapter's schema in it.
type DB struct {
	pool    *pgxpool.Pool
	version string
}

// Open connects to the database at url (postgres://user:pw@host:port/db),
// checks it answers and creates the schema if absent. Its errors never carry
// the password of url.
func Open(ctx context.Context, url string) (*DB, error) {
	db, err := open(ctx, url)
	if err != nil {
		// pgx lists one line per address tried; a report wants one line.
		msg := redact.Error(err, redact.Secrets(url)...).Error()
		msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
		return nil, &openError{msg: "postgres: " + msg, err: err}
	}
	return db, nil
}

// openError is Open's error: redacted, on one line, still unwrapping to the
// driver's error for errors.As.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg }
func (e *openError) Unwrap() error { return e.err }

func open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	first := cfg.ConnConfig.ConnectTimeout
	if first == 0 {
		first = ConnectTimeout
		cfg.ConnConfig.ConnectTimeout = PoolConnectTimeout
	}
	// pgxpool's default (4 on this machine) would queue the suite's eight
	// racing writers in the pool; enough connections let them meet at the
	// constraints, where the race is decided. pool_max_conns in the URL wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The first connection within first: an unreachable server fails here.
	fctx, fcancel := context.WithTimeout(ctx, first)
	conn, err := pool.Acquire(fctx)
	fcancel()
	if err != nil {
		pool.Close()
		return nil, err
	}
	conn.Release()
	ctx, cancel := context.WithTimeout(ctx, first+10*time.Second)
	defer cancel()
	if err := createSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		pool.Close()
		return nil, err
	}
	return &DB{pool: pool, version: version}, nil
}

// createSchema runs the DDL under a transaction-scoped advisory lock: two
// processes creating the schema at once would otherwise collide in the
// catalog despite IF NOT EXISTS.
func createSchema(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('onceproof_tck schema'))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
}

// Version is the server version.
func (db *DB) Version() string { return db.version }

// Store returns a handle; handles share the pool. Closing a handle does not
// close the pool.
func (db *DB) Store() *Store { return &Store{db: db} }

// Close closes the pool; handles fail afterwards with pgx's "closed pool".
func (db *DB) Close() error {
	db.pool.Close()
	return nil
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

// Append implements es.EventStore: one statement writes the stream row and
// its events, or nothing.
func (s *Store) Append(ctx context.Context, st es.Stream) error {
	if err := s.Usable(ctx); err != nil {
		return err
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	names := make([]string, len(st.Events))
	bodies := make([][]byte, len(st.Events))
	for i, e := range st.Events {
		names[i] = e.Name
		bodies[i] = e.Body
		if bodies[i] == nil {
			bodies[i] = []byte{} // NOT NULL: an empty body is zero bytes, not NULL
		}
	}
	a := st.Aggregate
	tag, err := s.db.pool.Exec(ctx, appendStream, a.Context, a.Name, a.Tenant, a.ID, st.Version, st.RequestID, st.CommandID, names, bodies)
	if err != nil {
		return s.conflict(ctx, st, err)
	}
	if tag.RowsAffected() == 0 {
		// The predecessor version is absent: tail+1 is not st.Version.
		return &es.VersionConflictError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
	}
	return nil
}

// conflict maps a unique violation of one of the two stream constraints to
// its typed conflict; anything else is returned unchanged.
func (s *Store) conflict(ctx context.Context, st es.Stream, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		return err
	}
	a := st.Aggregate
	switch pe.ConstraintName {
	case RequestConstraint:
		return &es.DuplicateRequestIDError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
	case VersionConstraint:
		if st.Version != es.InitialVersion {
			return &es.VersionConflictError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
		}
		// The aggregate exists. An exact retry (its request id already
		// there) is told so, like the reference store. The violation was
		// raised only once the rival row committed, and stored rows are
		// never removed, so this later read sees what the constraint saw.
		dup, qerr := s.RequestIDExists(ctx, a, st.RequestID)
		if qerr != nil {
			return errors.Join(err, qerr) // undecided: not reported as a conflict
		}
		if dup {
			return &es.DuplicateRequestIDError{Aggregate: a, Version: st.Version, RequestID: st.RequestID}
		}
		return &es.DuplicateAggregateIDError{Aggregate: a, RequestID: st.RequestID}
	}
	return err
}

// Load implements es.EventStore.
func (s *Store) Load(ctx context.Context, agg es.AggregateID, from, to int) ([]es.Stream, error) {
	if err := s.Usable(ctx); err != nil {
		return nil, err
	}
	if err := eskit.ValidateRange(from, to); err != nil {
		return nil, err
	}
	rows, err := s.db.pool.Query(ctx, selectStreams, agg.Context, agg.Name, agg.Tenant, agg.ID, clamp(from), clamp(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []es.Stream
	for rows.Next() {
		var (
			version            int32
			requestID, command string
			e                  es.Event
		)
		if err := rows.Scan(&version, &requestID, &command, &e.Name, &e.Body); err != nil {
			return nil, err
		}
		out = sqlrows.Append(out, agg, int(version), requestID, command, e)
	}
	return out, rows.Err()
}

// clamp keeps a range bound inside the integer column's domain (eskit.MaxVersion
// is 2^31-1 already; a larger caller value means "no upper bound").
func clamp(v int) int32 {
	if v > eskit.MaxVersion {
		return int32(eskit.MaxVersion)
	}
	return int32(v)
}

// RequestIDExists implements es.EventStore.
func (s *Store) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if err := s.Usable(ctx); err != nil {
		return false, err
	}
	var ok bool
	err := s.db.pool.QueryRow(ctx, selectRequest, agg.Context, agg.Name, agg.Tenant, agg.ID, requestID).Scan(&ok)
	return ok, err
}

// String names the adapter in reports.
func (s *Store) String() string { return fmt.Sprintf("postgres event store (server %s)", s.db.version) }
