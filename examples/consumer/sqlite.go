package consumer

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the consumers' own database: a SQLite file
)

// openDB opens (creating it if needed) the SQLite file name in dir, with
// schema applied, for one instance: the handle closes when ctx ends (the
// instance crashed or stopped), as a process's handles close when it dies.
// A new instance opens the same file again.
func openDB(ctx context.Context, dir, name, schema string) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)") // two instances write the one file
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, name)+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// Switching to WAL while another handle closes the file can answer
	// SQLITE_BUSY at once: a moment, so try again briefly.
	for attempt := 0; ; attempt++ {
		if _, err = db.ExecContext(ctx, schema); err == nil {
			break
		}
		if attempt == 100 || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			_ = db.Close()
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		<-ctx.Done()
		_ = db.Close()
	}()
	return db, nil
}

// fileName is a database file of one rule's consumer: the kit's rules run
// at the same time, each with instances of its own.
func fileName(rule, what string) string {
	return strings.NewReplacer(".", "_", "/", "_").Replace(rule) + "-" + what + ".db"
}

// slotOf is the worker slot of an instance name ("W2" of "W2#5"): the kit
// runs one instance per slot at a time and starts the next one after a
// crash, as an orchestrator restarts a pod of a StatefulSet under its name.
func slotOf(instance string) string {
	slot, _, _ := strings.Cut(instance, "#")
	return slot
}
