// Package apiservice is the HTTP order service behind the api suite's
// reference and its mutants: net/http in front of the kit's SQLite event
// store, implementing the kit's default endpoint description
// (internal/apidesc.Default) under either contract (Description: one
// mutant takes its id from the body instead). A mutant is this service
// with exactly one real-world defect switched on. Every store call goes
// through the kit's failure switch (storefault), registered under the
// instance's URL, so API-6.1 can fail the service's own dependency.
//
//	POST /orders            Idempotency-Key: K, X-Tenant: T, body {"item":..,"qty":..}
//	GET  /orders/{id}       the authoritative read by the stable id (X-Tenant scopes it)
//	GET  /orders?requestId= every order carrying the id, as a JSON array
//
// An order is one event stream: aggregate (api, order, K, T), request id K,
// so the store's own constraint decides "first or repeat" inside its
// atomic write. The event holds the payload and the exact response of the
// creation, which is what a replay sends back byte for byte and what a read
// shows.
package apiservice

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/apiservice/storefault"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/leftovers"
)

// Defect is one deliberately broken behaviour ("" for none).
type Defect string

const (
	// CheckThenInsert looks the key up, then inserts under a fresh row id
	// without a constraint: two requests racing both pass the look-up.
	CheckThenInsert Defect = "check-then-insert"
	// Overwrite treats a repeat as an upsert: the original is replaced.
	Overwrite Defect = "overwrite"
	// ServerIDs ignores the client's key for identity: every request is a
	// new order under an id the server generates.
	ServerIDs Defect = "server-ids"
	// MemoryReplay keeps the responses to replay in process memory: after
	// a restart a repeat finds the order but not its response.
	MemoryReplay Defect = "memory-replay"
	// Text500 answers a duplicate with the database's error as a 500 text.
	Text500 Defect = "text-500"
	// StaleRead serves reads from a cache that keeps a miss.
	StaleRead Defect = "stale-read"
	// Unscoped ignores the tenant in the key: an id is global.
	Unscoped Defect = "unscoped"
	// ContentDedupe refuses a request whose payload was seen under another
	// key: identity by content, not by id.
	ContentDedupe Defect = "content-dedupe"

	// The defects of issue 20, each a fresh defect the tame values and
	// schedules of the earlier rules let through.

	// ForgetKeys keeps a key for 2 s: a repeat later is a new creation.
	ForgetKeys Defect = "forget-keys"
	// ForgetKeysLater keeps a key for 4 s (a key memory with a longer
	// time-to-live, still far short of any declared retention).
	ForgetKeysLater Defect = "forget-keys-4s"
	// ResponseAfterCommit commits the order, then stores the response to
	// replay in a second transaction: a crash between the two leaves a key
	// without a response, which the service answers as in flight forever.
	ResponseAfterCommit Defect = "response-after-commit"
	// PartialFingerprint compares only the vary field of two payloads: a
	// payload that differs in another field is replayed, not refused.
	PartialFingerprint Defect = "partial-fingerprint"
	// LowerKeys folds the key to lower case (a case-insensitive collation).
	LowerKeys Defect = "lower-keys"
	// CutKeys keeps the first 32 bytes of a key (a CHAR(32) column).
	CutKeys Defect = "cut-keys"
	// JoinedKeys keys orders by tenant+key with no separator.
	JoinedKeys Defect = "joined-keys"
	// TenantFromBody takes the tenant of a create from the body's "tenant"
	// field when it has one, over the declared X-Tenant header.
	TenantFromBody Defect = "tenant-from-body"
	// DropLocation replays the body and status but not the Location header.
	DropLocation Defect = "drop-location"
	// LaggingReads serves reads from a view 1 s behind the writes.
	LaggingReads Defect = "lagging-reads"

	// The defects of issue 37, caught by structure: values that decode or
	// hash alike, and replicas that differ.

	// URLDecodedKeys percent-decodes the key before using it: a%2Bb and
	// a+b are one.
	URLDecodedKeys Defect = "url-decoded-keys"
	// HashCodeKeys keys orders by the key's Java String.hashCode: Aa and BB
	// are one.
	HashCodeKeys Defect = "hashcode-keys"
	// ReplicaLowerKeys: the replica folds keys to lower case (LowerKeys);
	// the first instance is correct.
	ReplicaLowerKeys Defect = "replica-lower-keys"
	// ReplicaFastClock: the replica's clock runs 25 h fast (fastClock);
	// the first instance is correct.
	ReplicaFastClock Defect = "replica-fast-clock"
	// CaseSensitiveHeader matches the names of the Idempotency-Key and
	// X-Tenant headers exactly, as a gateway or a hand-written parser in
	// front of every instance may (exactNames): "idempotency-key: K" is a
	// request without a key, "x-tenant: T" one without a tenant.
	CaseSensitiveHeader Defect = "case-sensitive-header"
	// LikeKeys finds an order by its key with SQL LIKE and the key
	// unescaped (SELECT ... WHERE key LIKE ?, PostgreSQL's LIKE): "_" and
	// "%" in a key match other keys, so order_1 finds orderX1.
	LikeKeys Defect = "like-keys"
	// GlobKeys finds an order by its key with SQLite's GLOB and the key
	// unescaped: "*", "?" and "[...]" in a key match other keys.
	GlobKeys Defect = "glob-keys"
	// Latin1Keys keeps keys in a single-byte (Latin-1) column: a letter
	// outside it is stored as "?", so ids that differ only in Greek,
	// Cyrillic or CJK letters or an emoji are one. A header carries no
	// such letter (RFC 9110 §5.5: field values are ASCII; the
	// Idempotency-Key draft's key is an sf-string, printable ASCII), so
	// this service takes its id from the body's requestId field, as its
	// description says (Description).
	Latin1Keys Defect = "latin1-keys"

	// Failures of the service's own store (API-6.1).

	// LookupFailsOpen looks the key up first (the store's Load) and takes a
	// failed look-up for "no such key"; it then appends the creation at
	// the end of the key's stream with a fresh request id (expected
	// version "any"), so no constraint stops a second creation.
	LookupFailsOpen Defect = "lookup-fails-open"
	// CreatedOnFailedWrite logs a failed write and answers the creation
	// anyway: 201 for an order that was never stored.
	CreatedOnFailedWrite Defect = "created-on-failed-write"
	// MissingOnFailedRead answers a read or list whose store call failed
	// as "no such order" (404, an empty list) instead of an error.
	MissingOnFailedRead Defect = "missing-on-failed-read"
)

// BodyIDField is the body member a service that takes its id from the
// body (Latin1Keys) reads it from.
const BodyIDField = "requestId"

// Description is the endpoint description the service implements under
// contract c with defect d: the default one, the id in the body for a
// defect that needs letters a header cannot carry.
func Description(c apidesc.Contract, d Defect) *apidesc.Description {
	desc := apidesc.Default(c)
	if d == Latin1Keys {
		desc.Create.ID = apidesc.Place{In: apidesc.InBody, Name: BodyIDField}
	}
	return desc
}

// exactHeaders are the header names CaseSensitiveHeader matches exactly:
// the default description's id and scope.
var exactHeaders = []string{"Idempotency-Key", "X-Tenant"}

// fastClock is the behaviour of ReplicaFastClock's replica: its clock is
// clockSkew fast, so with the declared retention (24 h) every key another
// instance stored is expired to it, and a repeat creates anew.
const fastClock Defect = "fast-clock"

// onReplica maps a replica-only defect to what its replica does; the first
// instance of the service runs without it.
var onReplica = map[Defect]Defect{ReplicaLowerKeys: LowerKeys, ReplicaFastClock: fastClock}

// instance is the behaviour d gives one instance: a replica-only defect is
// none on the first instance and its replica behaviour on a replica.
func (d Defect) instance(replica bool) Defect {
	b, only := onReplica[d]
	switch {
	case !only:
		return d
	case replica:
		return b
	}
	return ""
}

// The time constants of the timed defects.
const (
	forgetAfter      = 2 * time.Second
	forgetLaterAfter = 4 * time.Second
	readLag          = time.Second
	// commitGap is how long the second transaction of ResponseAfterCommit
	// comes after the first (a fsync, a message to a worker).
	commitGap = 30 * time.Millisecond
	// clockSkew is how fast fastClock's clock runs: past the declared
	// retention of 24 h.
	clockSkew = 25 * time.Hour
)

// record is the one event of an order.
type record struct {
	Payload  json.RawMessage `json:"payload"`  // canonical JSON of the request body
	Status   int             `json:"status"`   // of the creation
	Response []byte          `json:"response"` // the creation's body, byte for byte
	Location string          `json:"location,omitempty"`
	At       time.Time       `json:"at"` // when the order was created
}

// engine is the service's in-process state; a restart makes a new one, so
// whatever it holds in memory is lost.
type engine struct {
	contract apidesc.Contract
	defect   Defect
	store    es.EventStore
	// retention is how long a key is recognised: the default
	// description's declared retention (24 h), which the service keeps.
	retention time.Duration
	skew      time.Duration // how far the instance's clock is off (fastClock)

	// dead is set when the service is killed: a handler still running
	// does nothing more with the store (a killed process writes nothing);
	// inflight lets the kill wait until no handler is inside a store call.
	dead     atomic.Bool
	inflight sync.WaitGroup

	mu      sync.Mutex
	index   map[string][]es.AggregateID // tenant/key -> orders (check-then-insert, server-ids)
	replies map[string]record           // memory-replay
	cache   map[string]cached           // stale-read
	seen    map[string]string           // content-dedupe: tenant/payload -> key
	seq     int
}

type cached struct {
	status int
	ctype  string
	body   []byte
}

func newEngine(c apidesc.Contract, d Defect, store es.EventStore, faults *storefault.Control) *engine {
	e := &engine{contract: c, defect: d,
		index: map[string][]es.AggregateID{}, replies: map[string]record{}, cache: map[string]cached{}, seen: map[string]string{}}
	e.retention, _ = apidesc.Default(c).RetentionFor()
	if d == fastClock {
		e.skew = clockSkew
	}
	e.store = fenced{EventStore: store, dead: &e.dead, faults: faults}
	return e
}

func (e *engine) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", e.create)
	mux.HandleFunc("GET /orders/{id}", e.read)
	mux.HandleFunc("GET /orders", e.list)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.inflight.Add(1)
		defer e.inflight.Done()
		mux.ServeHTTP(mute{w, &e.dead}, r)
	})
}

// mute is a response writer that a kill silences: a killed process sends
// no answer, so a handler of a killed engine ends its connection instead.
type mute struct {
	http.ResponseWriter
	dead *atomic.Bool
}

func (m mute) check() {
	if m.dead.Load() {
		panic(http.ErrAbortHandler)
	}
}

func (m mute) WriteHeader(status int) { m.check(); m.ResponseWriter.WriteHeader(status) }

func (m mute) Write(b []byte) (int, error) { m.check(); return m.ResponseWriter.Write(b) }

// kill ends the engine as SIGKILL ends a process: no store call after it;
// it returns once no handler is inside one.
func (e *engine) kill() {
	e.dead.Store(true)
	e.inflight.Wait()
}

// errKilled is what a store call of a killed engine returns.
var errKilled = errors.New("apiservice: the service was killed")

// fenced is the store as a killed engine sees it: every call after the
// kill fails, none reaches the database. Every call goes through the
// kit's failure switch (storefault), which fails it when a plan says so.
type fenced struct {
	es.EventStore
	dead   *atomic.Bool
	faults *storefault.Control
}

func (f fenced) Append(ctx context.Context, s es.Stream) error {
	if f.dead.Load() {
		return errKilled
	}
	return f.faults.Do(ctx, storefault.Call{Op: storefault.OpAppend, Agg: s.Aggregate}, func(ctx context.Context) error {
		return f.EventStore.Append(ctx, s)
	})
}

func (f fenced) Load(ctx context.Context, agg es.AggregateID, from, to int) (out []es.Stream, err error) {
	if f.dead.Load() {
		return nil, errKilled
	}
	err = f.faults.Do(ctx, storefault.Call{Op: storefault.OpLoad, Agg: agg}, func(ctx context.Context) (err error) {
		out, err = f.EventStore.Load(ctx, agg, from, to)
		return err
	})
	return out, err
}

func (f fenced) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (ok bool, err error) {
	if f.dead.Load() {
		return false, errKilled
	}
	err = f.faults.Do(ctx, storefault.Call{Op: storefault.OpExists, Agg: agg}, func(ctx context.Context) (err error) {
		ok, err = f.EventStore.RequestIDExists(ctx, agg, requestID)
		return err
	})
	return ok, err
}

// now is the instance's clock.
func (e *engine) now() time.Time { return time.Now().Add(e.skew) }

func tenantOf(r *http.Request) string {
	if t := r.Header.Get("X-Tenant"); t != "" {
		return t
	}
	return "default"
}

func (e *engine) agg(key, tenant string) es.AggregateID {
	switch e.defect {
	case Unscoped:
		tenant = ""
	case LowerKeys:
		key = strings.ToLower(key)
	case CutKeys:
		key = key[:min(len(key), 32)]
	case JoinedKeys:
		key, tenant = tenant+key, ""
	case URLDecodedKeys:
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
	case HashCodeKeys:
		key = strconv.Itoa(int(javaHash(key)))
	case Latin1Keys:
		key = strings.Map(func(r rune) rune {
			if r > 0xff {
				return '?' // what a latin1 column stores for a character it lacks
			}
			return r
		}, key)
	}
	return es.AggregateID{Context: "api", Name: "order", ID: key, Tenant: tenant}
}

// javaHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16
// units, as a service keying on it computes it.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// problem writes an RFC 9457 problem+json body carrying the identifiers.
func problem(w http.ResponseWriter, status int, title, detail, key, tenant string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{
		"type": "https://onceproof.dev/problems/" + http.StatusText(status), "title": title, "status": status,
		"detail": detail, "requestId": key, "tenant": tenant,
	})
	_, _ = w.Write(b)
}

func (e *engine) create(w http.ResponseWriter, r *http.Request) {
	key, tenant := r.Header.Get("Idempotency-Key"), tenantOf(r)
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		problem(w, http.StatusBadRequest, "malformed body", "the body must be a JSON object: "+err.Error(), key, tenant)
		return
	}
	if e.defect == Latin1Keys {
		key, _ = body[BodyIDField].(string) // the id's place in its description
	}
	if key == "" {
		title, detail := "missing Idempotency-Key", "a create needs the Idempotency-Key header"
		if e.defect == Latin1Keys {
			title, detail = "missing "+BodyIDField, "a create needs the body member "+BodyIDField
		}
		problem(w, http.StatusBadRequest, title, detail, "", tenant)
		return
	}
	payload, _ := json.Marshal(body) // canonical: keys sorted
	if t, ok := body["tenant"].(string); ok && t != "" && e.defect == TenantFromBody {
		tenant = t
	}
	if e.defect == ContentDedupe {
		fp := tenant + "/" + string(payload)
		e.mu.Lock()
		other, dup := e.seen[fp]
		if !dup {
			e.seen[fp] = key
		}
		e.mu.Unlock()
		if dup && other != key {
			problem(w, http.StatusConflict, "duplicate order", "an order with this content exists", key, tenant)
			return
		}
	}
	rec := e.render(key, tenant, body, payload)
	agg, err := e.resolve(r.Context(), key, tenant)
	if err != nil {
		problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
		return
	}
	switch e.defect {
	case CheckThenInsert, ServerIDs:
		e.createIndexed(w, r, agg, key, tenant, rec)
		return
	case LookupFailsOpen:
		e.createLookedUp(w, r, agg, key, tenant, rec)
		return
	}
	first := rec
	if e.defect == ResponseAfterCommit {
		first.Response, first.Location = nil, ""
	}
	err = e.store.Append(r.Context(), e.stream(agg, key, first, 1))
	if err == nil && e.pattern() {
		err = e.remember(r.Context(), key, tenant) // a second statement, as the key column's index would be
		if err != nil {
			problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
			return
		}
	}
	if err == nil {
		if e.defect == ResponseAfterCommit {
			time.Sleep(commitGap)
			if err := e.store.Append(r.Context(), e.stream(agg, key, rec, 2)); err != nil {
				problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
				return
			}
		}
		if e.defect == MemoryReplay {
			e.mu.Lock()
			e.replies[tenant+"/"+key] = rec
			e.mu.Unlock()
		}
		write(w, rec)
		return
	}
	if !errors.Is(err, es.ErrConflict) {
		if e.defect == CreatedOnFailedWrite {
			// Logged and answered anyway: the write "will be retried".
			write(w, rec)
			return
		}
		problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
		return
	}
	e.repeat(w, r, agg, key, tenant, rec)
}

// createLookedUp is LookupFailsOpen's create: the key looked up, a failed
// look-up taken for "no such key", then the creation appended after the
// stream's tail under a request id of its own (an append with expected
// version "any"): the store's constraints never see the key.
func (e *engine) createLookedUp(w http.ResponseWriter, r *http.Request, agg es.AggregateID, key, tenant string, rec record) {
	ctx := r.Context()
	streams, err := e.store.Load(ctx, agg, es.InitialVersion, eskit.MaxVersion)
	if err != nil {
		streams = nil // the defect
	}
	if len(streams) > 0 {
		e.repeat(w, r, agg, key, tenant, rec)
		return
	}
	version := es.InitialVersion
	for try := 0; ; try++ {
		s := e.stream(agg, key, rec, version)
		s.RequestID = newID()
		err = e.store.Append(ctx, s)
		if err == nil {
			write(w, rec)
			return
		}
		if !errors.Is(err, es.ErrConflict) || try == 5 {
			break
		}
		// Taken meanwhile (or all along): append after the tail.
		streams, err = e.store.Load(ctx, agg, es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			break
		}
		version = len(streams) + 1
	}
	problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
}

// pattern says whether the engine finds keys by a pattern (LikeKeys,
// GlobKeys).
func (e *engine) pattern() bool { return e.defect == LikeKeys || e.defect == GlobKeys }

// keyDir is the stream where a pattern-keyed engine lists its tenant's
// keys, one stream per key in creation order: its key column, which
// "WHERE key LIKE ?" scans.
func keyDir(tenant string) es.AggregateID {
	return es.AggregateID{Context: "api", Name: "order-keys", ID: "all", Tenant: tenant}
}

// resolve is the order aggregate of key: for a pattern-keyed engine the
// first stored key the unescaped key matches as a pattern, else agg.
func (e *engine) resolve(ctx context.Context, key, tenant string) (es.AggregateID, error) {
	if !e.pattern() {
		return e.agg(key, tenant), nil
	}
	streams, err := e.store.Load(ctx, keyDir(tenant), es.InitialVersion, eskit.MaxVersion)
	if err != nil {
		return es.AggregateID{}, err
	}
	for _, s := range streams {
		if stored := string(s.Events[0].Body); e.matches(key, stored) {
			return e.agg(stored, tenant), nil
		}
	}
	return e.agg(key, tenant), nil
}

// remember lists key in its tenant's key stream (a no-op if listed).
func (e *engine) remember(ctx context.Context, key, tenant string) error {
	dir := keyDir(tenant)
	for try := 0; ; try++ {
		streams, err := e.store.Load(ctx, dir, es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			return err
		}
		err = e.store.Append(ctx, es.Stream{Aggregate: dir, Version: len(streams) + 1, RequestID: key, CommandID: newID(),
			Events: []es.Event{{Name: "KeyListed", Body: []byte(key)}}})
		var dup *es.DuplicateRequestIDError
		switch {
		case err == nil, errors.As(err, &dup):
			return nil
		case !errors.Is(err, es.ErrConflict) || try == 20:
			return err
		}
	}
}

// matches is the engine's pattern match of a stored key against the
// unescaped pattern: PostgreSQL's LIKE (_ one character, % any run, \
// escaping the next character, case-sensitive;
// https://www.postgresql.org/docs/current/functions-matching.html#FUNCTIONS-LIKE)
// or SQLite's GLOB (* ? [...], case-sensitive, no escape character;
// https://sqlite.org/lang_expr.html#like).
func (e *engine) matches(pattern, stored string) bool {
	var b strings.Builder
	b.WriteString("^")
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case e.defect == LikeKeys && c == '\\' && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case e.defect == LikeKeys && c == '_', e.defect == GlobKeys && c == '?':
			b.WriteString(".")
		case e.defect == LikeKeys && c == '%', e.defect == GlobKeys && c == '*':
			b.WriteString(".*")
		case e.defect == GlobKeys && c == '[':
			j := i + 1
			for j < len(rs) && (rs[j] != ']' || j == i+1) {
				j++
			}
			if j == len(rs) {
				b.WriteString(regexp.QuoteMeta(string(c)))
				continue
			}
			class := string(rs[i+1 : j])
			if neg, ok := strings.CutPrefix(class, "^"); ok {
				class = "^" + strings.ReplaceAll(neg, `\`, `\\`)
			} else {
				class = strings.ReplaceAll(class, `\`, `\\`)
			}
			b.WriteString("[" + class + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile("(?s)" + b.String())
	return err == nil && re.MatchString(stored)
}

// render is the creation's response, made once and stored with the order.
func (e *engine) render(key, tenant string, body map[string]any, payload []byte) record {
	e.mu.Lock()
	e.seq++
	seq := e.seq
	e.mu.Unlock()
	now := e.now().UTC()
	res := map[string]any{"id": key, "tenant": tenant, "createdAt": now.Format(time.RFC3339Nano), "seq": seq}
	for k, v := range body {
		if _, taken := res[k]; !taken {
			res[k] = v
		}
	}
	b, _ := json.Marshal(res)
	return record{Payload: payload, Status: http.StatusCreated, Response: b, Location: "/orders/" + url.PathEscape(key), At: now}
}

func (e *engine) stream(agg es.AggregateID, key string, rec record, version int) es.Stream {
	data, _ := json.Marshal(rec)
	reqID := key
	if version > 1 {
		reqID = fmt.Sprintf("%s#%d", key, version) // the overwrite mutant's later writes
	}
	return es.Stream{Aggregate: agg, Version: version, RequestID: reqID, CommandID: newID(),
		Events: []es.Event{{Name: "OrderCreated", Body: data}}}
}

func write(w http.ResponseWriter, rec record) {
	w.Header().Set("Content-Type", "application/json")
	if rec.Location != "" {
		w.Header().Set("Location", rec.Location)
	}
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Response)
}

// repeat answers a request whose key is taken.
func (e *engine) repeat(w http.ResponseWriter, r *http.Request, agg es.AggregateID, key, tenant string, rec record) {
	if e.defect == Text500 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "UNIQUE constraint failed: streams.context, streams.name, streams.tenant, streams.id, streams.version\n")
		return
	}
	first, version, err := e.latest(r.Context(), agg)
	if err != nil || version == 0 {
		problem(w, http.StatusServiceUnavailable, "store unavailable", fmt.Sprint("reading the order: ", err), key, tenant)
		return
	}
	if ttl, ok := e.keyTTL(); ok && e.now().Sub(first.At) > ttl {
		// The key has expired: the request is taken as a new one.
		if err := e.store.Append(r.Context(), e.stream(agg, key, rec, version+1)); err != nil {
			problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
			return
		}
		write(w, rec)
		return
	}
	if e.defect == Overwrite {
		rec.Status = http.StatusOK
		if err := e.store.Append(r.Context(), e.stream(agg, key, rec, version+1)); err != nil {
			problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
			return
		}
		write(w, rec)
		return
	}
	same := bytes.Equal(first.Payload, rec.Payload)
	if e.defect == PartialFingerprint {
		same = field(first.Payload, "qty") == field(rec.Payload, "qty")
	}
	if e.defect == DropLocation {
		first.Location = ""
	}
	switch {
	case e.contract == apidesc.Reject409:
		problem(w, http.StatusConflict, "duplicate request id", "an order with this Idempotency-Key exists; it is unchanged", key, tenant)
	case !same:
		problem(w, http.StatusUnprocessableEntity, "Idempotency-Key reused", "this Idempotency-Key was used with another payload", key, tenant)
	case e.defect == ResponseAfterCommit && first.Response == nil:
		// The key is taken and no response stored: still in flight, it
		// says, whatever happened to the request.
		problem(w, http.StatusConflict, "request in flight", "a request with this Idempotency-Key is still being processed", key, tenant)
	case e.defect == MemoryReplay:
		e.mu.Lock()
		kept, ok := e.replies[tenant+"/"+key]
		e.mu.Unlock()
		if !ok {
			problem(w, http.StatusConflict, "duplicate request id", "an order with this Idempotency-Key exists", key, tenant)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		write(w, kept)
	default:
		w.Header().Set("Idempotent-Replayed", "true")
		write(w, first)
	}
}

// keyTTL is how long the instance keeps a key: a forgetting defect's
// time-to-live, else the declared retention; ok is false for a service
// that keeps its keys for ever.
func (e *engine) keyTTL() (ttl time.Duration, ok bool) {
	switch e.defect {
	case ForgetKeys:
		return forgetAfter, true
	case ForgetKeysLater:
		return forgetLaterAfter, true
	}
	return e.retention, e.retention > 0
}

// latest is the order's current record and version (0: none).
func (e *engine) latest(ctx context.Context, agg es.AggregateID) (record, int, error) {
	streams, err := e.store.Load(ctx, agg, es.InitialVersion, eskit.MaxVersion)
	if err != nil || len(streams) == 0 {
		return record{}, 0, err
	}
	// The last write: the creation, or what an overwrite, a creation
	// after the key expired or a second transaction wrote after it.
	last := streams[len(streams)-1]
	var rec record
	err = json.Unmarshal(last.Events[0].Body, &rec)
	return rec, last.Version, err
}

// field is one member of a JSON object, as JSON ("" if absent).
func field(obj []byte, name string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(obj, &m)
	return string(m[name])
}

// createIndexed is the create of the two mutants that key orders by a
// server id and find them through an index in memory.
func (e *engine) createIndexed(w http.ResponseWriter, r *http.Request, agg es.AggregateID, key, tenant string, rec record) {
	ik := tenant + "/" + key
	if e.defect == CheckThenInsert {
		e.mu.Lock()
		taken := len(e.index[ik]) > 0
		e.mu.Unlock()
		if taken {
			problem(w, http.StatusConflict, "duplicate request id", "an order with this Idempotency-Key exists", key, tenant)
			return
		}
	}
	agg.ID = newID() // the row's own id, not the client's key
	if err := e.store.Append(r.Context(), e.stream(agg, key, rec, 1)); err != nil {
		problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
		return
	}
	e.mu.Lock()
	e.index[ik] = append(e.index[ik], agg)
	e.mu.Unlock()
	write(w, rec)
}

// orders are the records carrying key under tenant.
func (e *engine) orders(ctx context.Context, key, tenant string) ([]record, error) {
	var aggs []es.AggregateID
	switch e.defect {
	case CheckThenInsert, ServerIDs:
		e.mu.Lock()
		aggs = append(aggs, e.index[tenant+"/"+key]...)
		e.mu.Unlock()
	case LookupFailsOpen:
		// Every stream of the key is a creation.
		streams, err := e.store.Load(ctx, e.agg(key, tenant), es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			return nil, err
		}
		var out []record
		for _, s := range streams {
			var rec record
			if err := json.Unmarshal(s.Events[0].Body, &rec); err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
		return out, nil
	default:
		a, err := e.resolve(ctx, key, tenant)
		if err != nil {
			return nil, err
		}
		aggs = []es.AggregateID{a}
	}
	var out []record
	for _, a := range aggs {
		rec, v, err := e.latest(ctx, a)
		if err != nil && e.defect == MissingOnFailedRead {
			continue // the defect: a failed read is "no such order"
		}
		if err != nil {
			return nil, err
		}
		if v > 0 && (e.defect != LaggingReads || e.now().Sub(rec.At) >= readLag) {
			out = append(out, rec) // a lagging view does not show it yet
		}
	}
	return out, nil
}

func (e *engine) read(w http.ResponseWriter, r *http.Request) {
	key, tenant := r.PathValue("id"), tenantOf(r)
	ck := tenant + "/" + key
	if e.defect == StaleRead {
		e.mu.Lock()
		c, ok := e.cache[ck]
		e.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", c.ctype)
			w.WriteHeader(c.status)
			_, _ = w.Write(c.body)
			return
		}
	}
	recs, err := e.orders(r.Context(), key, tenant)
	if err != nil {
		problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
		return
	}
	c := cached{status: http.StatusNotFound, ctype: "application/problem+json"}
	if len(recs) > 0 {
		c = cached{status: http.StatusOK, ctype: "application/json", body: recs[0].shown(key, tenant)}
	} else {
		c.body, _ = json.Marshal(map[string]any{"type": "about:blank", "title": "no such order", "status": 404, "requestId": key, "tenant": tenant})
	}
	if e.defect == StaleRead {
		e.mu.Lock()
		e.cache[ck] = c
		e.mu.Unlock()
	}
	w.Header().Set("Content-Type", c.ctype)
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

func (e *engine) list(w http.ResponseWriter, r *http.Request) {
	key, tenant := r.URL.Query().Get("requestId"), tenantOf(r)
	if key == "" {
		problem(w, http.StatusBadRequest, "missing requestId", "list needs ?requestId=", "", tenant)
		return
	}
	recs, err := e.orders(r.Context(), key, tenant)
	if err != nil {
		problem(w, http.StatusServiceUnavailable, "store unavailable", err.Error(), key, tenant)
		return
	}
	items := make([]json.RawMessage, 0, len(recs))
	for _, rec := range recs {
		items = append(items, rec.shown(key, tenant))
	}
	b, _ := json.Marshal(items)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// shown is the order as a read shows it: the creation's response, or (an
// order whose response is not stored) its payload with its identifiers.
func (rec record) shown(key, tenant string) []byte {
	if rec.Response != nil {
		return rec.Response
	}
	var m map[string]any
	_ = json.Unmarshal(rec.Payload, &m)
	if m == nil {
		m = map[string]any{}
	}
	m["id"], m["tenant"] = key, tenant
	b, _ := json.Marshal(m)
	return b
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Server is one running service: a loopback listener, its SQLite file in a
// directory of its own (registered with internal/leftovers), and an engine.
type Server struct {
	contract apidesc.Contract
	defect   Defect
	dir      string
	untrack  func()
	replica  bool // shares another server's directory: Stop leaves it
	// faults is the kit's switch over this instance's store calls,
	// registered under its URL while it serves (storefault.For).
	faults     *storefault.Control
	unregister func()

	mu   sync.Mutex
	addr string
	srv  *http.Server
	db   *sqlite.DB
	eng  *engine
	done chan struct{}
}

// Start starts a service on a free loopback port.
func Start(ctx context.Context, c apidesc.Contract, d Defect) (*Server, error) {
	s := &Server{contract: c, defect: d, faults: &storefault.Control{}}
	err := leftovers.Create(func() error {
		dir, err := leftovers.MkdirTemp("tck-api-*")
		if err != nil {
			return err
		}
		s.dir = dir
		s.untrack = leftovers.Track("directory "+dir, func() error { return os.RemoveAll(dir) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating the service's directory: %w", err)
	}
	if err := s.up(ctx, "127.0.0.1:0"); err != nil {
		_ = s.removeDir()
		return nil, err
	}
	return s, nil
}

// up opens the database and serves on addr; s.mu is held or s is new.
func (s *Server) up(ctx context.Context, addr string) error {
	db, err := sqlite.Open(ctx, filepath.Join(s.dir, "orders.db"))
	if err != nil {
		return err
	}
	var ln net.Listener
	// The port of a service just closed can take a moment to be free again.
	for try := 0; ; try++ {
		ln, err = net.Listen("tcp", addr)
		if err == nil || try == 50 || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	if s.defect == CaseSensitiveHeader {
		ln = exactNames{Listener: ln, names: exactHeaders}
	}
	eng := newEngine(s.contract, s.defect.instance(s.replica), db.Store(), s.faults)
	srv := &http.Server{Handler: eng.routes(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	s.addr, s.srv, s.db, s.done, s.eng = ln.Addr().String(), srv, db, done, eng
	s.unregister = storefault.Register("http://"+s.addr, s.faults)
	return nil
}

// down closes every connection at once (a crash, as far as a client can
// tell) and the database.
func (s *Server) down() error {
	if s.srv == nil {
		return nil
	}
	s.unregister()
	s.eng.dead.Store(true)
	err := s.srv.Close()
	<-s.done
	s.eng.kill()
	err = errors.Join(err, s.db.Close())
	s.srv, s.db = nil, nil
	return err
}

// URL is the service's base URL.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// Restart ends the service abruptly and starts a new one on the same port
// and database: what the old one kept in memory is gone.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.down(); err != nil {
		return err
	}
	return s.up(ctx, s.addr)
}

// Replica starts a second instance of the service on another free port
// over the same database, as two replicas of one service share theirs.
// Its Stop leaves the database to s. A replica-only defect (onReplica)
// applies here and not on s.
func (s *Server) Replica(ctx context.Context) (*Server, error) {
	r := &Server{contract: s.contract, defect: s.defect, dir: s.dir, replica: true, faults: &storefault.Control{}}
	if err := r.up(ctx, "127.0.0.1:0"); err != nil {
		return nil, err
	}
	return r, nil
}

// Stop ends the service and removes its directory.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.down(), s.removeDir())
}

func (s *Server) removeDir() error {
	if s.replica {
		return nil
	}
	err := os.RemoveAll(s.dir)
	if err == nil {
		s.untrack()
	}
	return err
}
