// Package api shows how a backend author certifies their own HTTP service
// with the api suite. Orders is the service under test, standing in for
// yours: an order API with an Idempotency-Key header that follows the replay
// contract of the IETF HTTPAPI Idempotency-Key draft, on SQLite.
//
// The point it makes: the key, a fingerprint of the request and the exact
// response are stored in the same transaction as the order, under a unique
// constraint on (tenant, key). The database decides "first or repeat"; a
// repeat gets the stored response byte for byte, another payload under the
// key 422. orders_test.go runs the suite against it with api.Check.
package api

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the service's own database
)

// Orders is the HTTP service.
type Orders struct{ db *sql.DB }

// Open opens (creating) the service's database file.
func Open(path string) (*Orders, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS orders (
		tenant TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, response BLOB NOT NULL,
		PRIMARY KEY (tenant, key))`)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Orders{db: db}, nil
}

// Close closes the database.
func (o *Orders) Close() error { return o.db.Close() }

// Handler serves POST /orders, GET /orders/{id} and GET /orders?requestId=.
func (o *Orders) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", o.create)
	mux.HandleFunc("GET /orders/{id}", o.read)
	mux.HandleFunc("GET /orders", o.list)
	return mux
}

func tenant(r *http.Request) string {
	if t := r.Header.Get("X-Tenant"); t != "" {
		return t
	}
	return "default"
}

// problem is an RFC 9457 body that carries the identifiers as members.
func problem(w http.ResponseWriter, status int, title, key, tenant string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": title, "status": status, "requestId": key, "tenant": tenant})
}

func (o *Orders) create(w http.ResponseWriter, r *http.Request) {
	key, tn := r.Header.Get("Idempotency-Key"), tenant(r)
	if key == "" {
		problem(w, http.StatusBadRequest, "the Idempotency-Key header is required", key, tn)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		problem(w, http.StatusBadRequest, "the body must be a JSON object", key, tn)
		return
	}
	canon, _ := json.Marshal(body) // keys sorted: the same payload, the same bytes
	sum := sha256.Sum256(canon)
	fp := hex.EncodeToString(sum[:])
	order := map[string]any{"id": key, "tenant": tn, "createdAt": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range body {
		if _, ok := order[k]; !ok {
			order[k] = v
		}
	}
	resp, _ := json.Marshal(order)
	_, err := o.db.ExecContext(r.Context(), `INSERT INTO orders VALUES (?, ?, ?, ?, ?)`, tn, key, fp, http.StatusCreated, resp)
	if err == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(resp)
		return
	}
	if !strings.Contains(err.Error(), "UNIQUE constraint failed") {
		problem(w, http.StatusServiceUnavailable, "the order could not be stored", key, tn)
		return
	}
	// The key is taken: replay the stored response, or refuse another payload.
	var storedFP string
	var status int
	var stored []byte
	err = o.db.QueryRowContext(r.Context(), `SELECT fingerprint, status, response FROM orders WHERE tenant = ? AND key = ?`, tn, key).Scan(&storedFP, &status, &stored)
	switch {
	case err != nil:
		problem(w, http.StatusServiceUnavailable, "the order could not be read", key, tn)
	case storedFP != fp:
		problem(w, http.StatusUnprocessableEntity, "the Idempotency-Key was used with another payload", key, tn)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(stored)
	}
}

func (o *Orders) responses(r *http.Request, key string) ([][]byte, error) {
	rows, err := o.db.QueryContext(r.Context(), `SELECT response FROM orders WHERE tenant = ? AND key = ?`, tenant(r), key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func (o *Orders) read(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("id")
	rs, err := o.responses(r, key)
	switch {
	case err != nil:
		problem(w, http.StatusServiceUnavailable, "the order could not be read", key, tenant(r))
	case len(rs) == 0:
		problem(w, http.StatusNotFound, "no such order", key, tenant(r))
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(rs[0])
	}
}

func (o *Orders) list(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("requestId")
	rs, err := o.responses(r, key)
	if err != nil {
		problem(w, http.StatusServiceUnavailable, "the orders could not be read", key, tenant(r))
		return
	}
	items := make([]json.RawMessage, 0, len(rs))
	for _, b := range rs {
		items = append(items, b)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(items)
}
