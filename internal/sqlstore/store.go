package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the durable store is a SQLite file: it outlives every consumer instance

	"github.com/onceproof/tck/co"
)

// SQLStore is Store on a SQLite file.
type SQLStore struct {
	db    *sql.DB
	clock co.Clock
	// The statements, prepared once per handle: a rule of thousands of
	// events (CO-5.2) would otherwise spend a third of its time parsing.
	get, insert, put, cas, del *sql.Stmt
}

// The store's statements.
const (
	getSQL    = `SELECT v, expires FROM dedupe WHERE k = ? AND (expires = 0 OR expires > ?)`
	insertSQL = `INSERT INTO dedupe (k, v, expires) VALUES (?, ?, ?)
		ON CONFLICT(k) DO UPDATE SET v = excluded.v, expires = excluded.expires
		WHERE dedupe.expires <> 0 AND dedupe.expires <= ?`
	putSQL = `INSERT INTO dedupe (k, v, expires) VALUES (?, ?, ?)
		ON CONFLICT(k) DO UPDATE SET v = excluded.v, expires = excluded.expires`
	casSQL = `UPDATE dedupe SET v = ?, expires = ? WHERE k = ? AND v = ? AND (expires = 0 OR expires > ?)`
	delSQL = `DELETE FROM dedupe WHERE k = ?`
)

// OpenStore opens (creating if needed) the store in the SQLite file at path.
// Several handles on one file may be open at once, one per consumer instance.
func OpenStore(path string, clock co.Clock) (*SQLStore, error) {
	db, err := OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS dedupe (k TEXT PRIMARY KEY, v TEXT NOT NULL, expires INTEGER NOT NULL)`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlstore: creating the store table: %w", err)
	}
	st := &SQLStore{db: db, clock: clock}
	for _, p := range []struct {
		to  **sql.Stmt
		sql string
	}{{&st.get, getSQL}, {&st.insert, insertSQL}, {&st.put, putSQL}, {&st.cas, casSQL}, {&st.del, delSQL}} {
		if *p.to, err = db.Prepare(p.sql); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("sqlstore: preparing the store's statements: %w", err)
		}
	}
	return st, nil
}

// OpenSQLite opens a SQLite file for use by several handles in one process:
// WAL so readers do not block the writer, and a busy timeout so that
// concurrent writers wait for the lock instead of failing.
func OpenSQLite(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// Setting WAL mode while another handle on the file closes (and
	// checkpoints) can answer SQLITE_BUSY at once, without the busy
	// handler: that is a moment, not a state, so try again briefly.
	for attempt := 0; ; attempt++ {
		err = db.Ping()
		if err == nil {
			return db, nil
		}
		if attempt == 100 || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			_ = db.Close()
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *SQLStore) expiry(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return s.clock.Now().Add(ttl).UnixNano()
}

// Get implements Store.
func (s *SQLStore) Get(ctx context.Context, key string) (co.Record, bool, error) {
	var v string
	var exp int64
	err := s.get.QueryRowContext(ctx, key, s.clock.Now().UnixNano()).Scan(&v, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return co.Record{}, false, nil
	}
	if err != nil {
		return co.Record{}, false, err
	}
	r := co.Record{Value: v}
	if exp != 0 {
		r.Expires = time.Unix(0, exp).UTC()
	}
	return r, true, nil
}

// Insert implements Store: one upsert statement whose update only happens
// over an expired row, so the check and the write are one atomic step.
func (s *SQLStore) Insert(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	res, err := s.insert.ExecContext(ctx, key, value, s.expiry(ttl), s.clock.Now().UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Put implements Store.
func (s *SQLStore) Put(ctx context.Context, key, value string, ttl time.Duration) error {
	_, err := s.put.ExecContext(ctx, key, value, s.expiry(ttl))
	return err
}

// CompareAndSwap implements Store.
func (s *SQLStore) CompareAndSwap(ctx context.Context, key, old, value string, ttl time.Duration) (bool, error) {
	res, err := s.cas.ExecContext(ctx, value, s.expiry(ttl), key, old, s.clock.Now().UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Delete implements Store.
func (s *SQLStore) Delete(ctx context.Context, key string) error {
	_, err := s.del.ExecContext(ctx, key)
	return err
}

// Close releases this handle; the file and its records stay.
func (s *SQLStore) Close() error {
	for _, st := range []*sql.Stmt{s.get, s.insert, s.put, s.cas, s.del} {
		if st != nil {
			_ = st.Close()
		}
	}
	return s.db.Close()
}
