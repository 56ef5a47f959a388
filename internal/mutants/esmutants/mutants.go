// Package esmutants ships deliberately broken event stores. Each one is the
// reference store (adapters/eventstore/memory) with one defect of the kind
// that reaches production: a check made outside the atomic write, a key
// missing a field, an error mapped wrong. The self-test runs the suite against
// every mutant and asserts which rules each one fails; a rule no mutant fails
// is a rule that cannot fail.
package esmutants

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/mutants"
	"github.com/onceproof/tck/internal/precheck"
)

// Mutant is one broken store.
type Mutant = mutants.Mutant[Flaw]

// Flaw is the one defect a mutant puts in the reference store.
type Flaw int

const (
	requestCheckThenWrite Flaw = iota + 1
	versionCheckThenWrite
	requestPerType
	eventByEvent
	stringErrors
	everythingVersionConflict
	brokenExists
	silentGap
	lossyBytes
	unknownIsError
	exclusiveRange
	tenantlessKey
	versionPerType
	silentDedupe
	createAsVersionConflict
	preCheckTrustsFast
	preCheckFailsOpen
	requestWindow
	existsLatestStream
	existsIgnoresContext
	existsIgnoresName
	existsIgnoresTenant
	closeOnlyAppend
	idColumnWidth
	caseFolding
	delimiterJoin
	truncatedBodies
	tailPerHandle
	uniquenessPerHandle
	requestTTL
	leakedReservation
	tailAsVersion
	storedRequestInCreate
	tornLoad
	requestLRU
	requestRecent
	loadFirstPage
	sanitizedKey
	requestPadSpace
	nameIdentifier
	requestTTLLong
	requestLRULarge
	versionZeroAny
	requestHashCode
	requestLike
	singleByteCharset
	urlDecodedIDs
	requestGlob
	caseInsensitiveIDs
	nfkcIDs
	sha256IDs
	requestFailOpen
	loadFailOpen
	appendCheckFailsOpen
	int16Version
	uint16Version
	int16EventPosition
	eventCap65535
)

// The widths and times of the generated-defect mutants.
const (
	idWidth       = 64                     // a VARCHAR(64) id column
	bodyWidth     = 64 << 10               // a 64 KiB body column
	requestTTLFor = 500 * time.Millisecond // request ids forgotten after this
	lruSize       = 4096                   // request ids a store-wide LRU cache holds
	// The bounded memories a realistic store keeps, which only ES-4.3
	// reaches: a time to live of seconds, an LRU of some ten thousand ids.
	requestTTLLongFor = 3 * time.Second
	lruLargeSize      = 12000
	recentWindow      = 256  // an aggregate's newest streams whose request ids Append checks
	pageSize          = 1000 // events a load's first (and only) page holds
	nameBytes         = 63   // PostgreSQL's identifier limit (NAMEDATALEN-1)
)

// window is how many of an aggregate's newest streams the request-window
// mutant remembers: more than any short probe writes, far fewer than a long
// history.
const window = 8

// All returns the mutants, in the order the self-test runs them.
func All() []Mutant {
	return []Mutant{
		{Name: "request-check-then-write", Defect: "checks the request id, releases the lock, then writes (application-level check-then-write)", MustFail: []string{"ES-2.3"}, Build: requestCheckThenWrite},
		{Name: "version-check-then-write", Defect: "checks the version, releases the lock, then writes; a racing writer overwrites the winner", MustFail: []string{"ES-2.1", "ES-2.2", "ES-2.5"}, Build: versionCheckThenWrite},
		{Name: "request-id-per-type", Defect: "request id unique per aggregate type instead of per aggregate", MustFail: []string{"ES-1.6", "ES-2.4"}, Build: requestPerType},
		{Name: "event-by-event", Defect: "writes a multi-event stream event by event and checks the request id afterwards, without a transaction", MustFail: []string{"ES-1.5", "ES-1.9"}, Build: eventByEvent},
		{Name: "string-errors", Defect: "returns conflicts as plain string errors", MustFail: []string{"ES-1.3", "ES-1.4", "ES-1.5", "ES-1.7", "ES-1.10"}, Build: stringErrors},
		{Name: "everything-is-a-version-conflict", Defect: "reports every failure, connection and argument errors included, as a version conflict", MustFail: []string{"ES-1.10", "ES-1.12"}, Build: everythingVersionConflict},
		{Name: "broken-exists-query", Defect: "the request-id existence query ignores the aggregate", MustFail: []string{"ES-1.8"}, Build: brokenExists},
		{Name: "silent-version-gap", Defect: "accepts any version above the tail (tail+2 too) while declaring no gaps", MustFail: []string{"ES-1.11"}, Build: silentGap},
		{Name: "lossy-bytes", Defect: "stores event bodies as text, replacing invalid UTF-8", MustFail: []string{"ES-1.1"}, Build: lossyBytes},
		{Name: "unknown-is-error", Defect: "loading an unknown aggregate returns a not-found error", MustFail: []string{"ES-1.2"}, Build: unknownIsError},
		{Name: "exclusive-range", Defect: "load treats the upper bound of the range as exclusive", MustFail: []string{"ES-1.12"}, Build: exclusiveRange},
		{Name: "tenantless-key", Defect: "the aggregate key leaves out the tenant", MustFail: []string{"ES-1.13"}, Build: tenantlessKey},
		{Name: "version-per-type", Defect: "the version constraint is on (aggregate type, version), not (aggregate, version)", MustFail: []string{"ES-1.6", "ES-2.6"}, Build: versionPerType},
		{Name: "silent-dedupe", Defect: "answers success to a duplicate request id without storing anything", MustFail: []string{"ES-1.5", "ES-1.7", "ES-2.5"}, Build: silentDedupe},
		{Name: "create-as-version-conflict", Defect: "reports a creation conflict as a version conflict", MustFail: []string{"ES-1.3"}, Build: createAsVersionConflict},
		{Name: "precheck-trusts-fast-checker", Defect: "rejects on the fast checker's 'maybe' without asking the authoritative query", MustFail: []string{"ES-3.1"}, Build: preCheckTrustsFast},
		{Name: "precheck-fails-open", Defect: "admits a 'maybe' when there is no authoritative query or it fails", MustFail: []string{"ES-3.1"}, Build: preCheckFailsOpen},
		{Name: "request-window", Defect: "remembers the request ids of an aggregate's 8 newest streams only (a window, a cache), in Append and in the query", MustFail: []string{"ES-1.5", "ES-1.8"}, Build: requestWindow},
		{Name: "exists-latest-stream", Defect: "the request-id existence query looks at the aggregate's latest stream only", MustFail: []string{"ES-1.8"}, Build: existsLatestStream},
		{Name: "exists-ignores-context", Defect: "the request-id existence query ignores the bounded context", MustFail: []string{"ES-1.8"}, Build: existsIgnoresContext},
		{Name: "exists-ignores-name", Defect: "the request-id existence query ignores the aggregate name", MustFail: []string{"ES-1.8"}, Build: existsIgnoresName},
		{Name: "exists-ignores-tenant", Defect: "the request-id existence query ignores the tenant", MustFail: []string{"ES-1.8"}, Build: existsIgnoresTenant},
		{Name: "close-only-append", Defect: "Close stops Append only; Load and the existence query go on answering", MustFail: []string{"ES-1.10"}, Build: closeOnlyAppend},
		// Defects the enumerated rules' tame values let through (issue 20);
		// the generated values and histories catch them.
		{Name: "id-column-width", Defect: "keys aggregates by their id cut to a 64-character column", MustFail: []string{"ES-4.1"}, Build: idColumnWidth},
		{Name: "case-folding", Defect: "keys aggregates case-insensitively, as a case-insensitive collation compares", MustFail: []string{"ES-1.13", "ES-4.1"}, Build: caseFolding},
		{Name: "delimiter-join", Defect: "keys aggregates by their parts joined with ':', unescaped", MustFail: []string{"ES-4.1"}, Build: delimiterJoin},
		{Name: "truncated-bodies", Defect: "cuts event bodies to a 64 KiB column", MustFail: []string{"ES-1.1", "ES-4.1"}, Build: truncatedBodies},
		{Name: "tail-per-handle", Defect: "each handle caches the tail version it last wrote and checks versions against its cache", MustFail: []string{"ES-4.1"}, Build: tailPerHandle},
		{Name: "uniqueness-per-handle", Defect: "request-id uniqueness is checked against the handle's own cache of the ids it wrote", MustFail: []string{"ES-4.1"}, Build: uniquenessPerHandle},
		{Name: "request-id-ttl", Defect: "forgets a request id 0.5 s after it was stored (a cache with a time to live), in Append and in the query", MustFail: []string{"ES-4.1"}, Build: requestTTL},
		{Name: "leaked-reservation", Defect: "a refused append (version or creation conflict) still reserves its request id", MustFail: []string{"ES-1.9", "ES-4.1"}, Build: leakedReservation},
		{Name: "tail-as-version", Defect: "the version conflict reports the tail instead of the version asked for", MustFail: []string{"ES-1.4", "ES-4.1"}, Build: tailAsVersion},
		{Name: "stored-request-in-create-conflict", Defect: "the creation conflict carries the stored create's request id instead of the refused one", MustFail: []string{"ES-1.3", "ES-2.2", "ES-4.1"}, Build: storedRequestInCreate},
		{Name: "torn-load", Defect: "writes a multi-event stream event by event, each visible at once (no transaction around them)", MustFail: []string{"ES-4.2"}, Build: tornLoad},
		// Defects that passed every rule until ES-4.1 drew bursts of
		// thousands of request ids, reach-back retries, partner request ids,
		// every kind of request-id twin, substituted characters in ids and
		// long names, contexts and tenants.
		{Name: "request-id-lru", Defect: "Append checks request ids in a store-wide LRU cache of 4096 ids in front of the write (no unique constraint); the query reads the history", MustFail: []string{"ES-4.1"}, Build: requestLRU},
		{Name: "request-id-recent", Defect: "Append checks the request ids of the aggregate's 256 newest streams only (ORDER BY version DESC LIMIT 256); the query reads the history", MustFail: []string{"ES-4.1"}, Build: requestRecent},
		{Name: "load-first-page", Defect: "Load returns the first page of 1000 events and does not follow the continuation", MustFail: []string{"ES-4.1"}, Build: loadFirstPage},
		{Name: "sanitized-key", Defect: "keys aggregates by their parts with every character outside [A-Za-z0-9._-] replaced by '_' (as a topic or file name)", MustFail: []string{"ES-4.1"}, Build: sanitizedKey},
		{Name: "name-as-table", Defect: "keeps each aggregate name in its own table, named by the name cut to 63 bytes (PostgreSQL's identifier limit)", MustFail: []string{"ES-4.1"}, Build: nameIdentifier},
		{Name: "request-id-pad-space", Defect: "compares request ids ignoring trailing spaces, as a PAD SPACE collation does, in Append and in the query", MustFail: []string{"ES-4.1"}, Build: requestPadSpace},
		// Bounded request-id memories of realistic sizes, which pass every
		// rule but ES-4.3: ES-4.1's horizon and 6000 ids stay inside them.
		{Name: "request-id-ttl-3s", Defect: "forgets a request id 3 s after it was stored (a cache with a time to live in front of the write, no unique constraint), in Append and in the query", MustFail: []string{"ES-4.3"}, Build: requestTTLLong},
		{Name: "request-id-lru-12000", Defect: "Append checks request ids in a store-wide LRU cache of 12000 ids in front of the write (no unique constraint); the query reads the history", MustFail: []string{"ES-4.3"}, Build: requestLRULarge},
		// Edges and look-alikes (issue 37): a version taken at its word
		// only in range, request ids compared by a shortcut.
		{Name: "version-zero-any", Defect: "takes an append at version 0 or below as \"any expected version\" and stores it at the tail", MustFail: []string{"ES-1.14"}, Build: versionZeroAny},
		{Name: "request-id-hashcode", Defect: "compares request ids by their Java String.hashCode, in Append and in the query", MustFail: []string{"ES-1.15"}, Build: requestHashCode},
		{Name: "request-id-like", Defect: "looks request ids up with an unescaped SQL LIKE ('_' matches any one character, '%' any run), in Append and in the query", MustFail: []string{"ES-1.15"}, Build: requestLike},
		{Name: "single-byte-charset", Defect: "stores ids in a single-byte charset: every character above U+00FF becomes '?', in aggregate keys and request ids", MustFail: []string{"ES-1.15"}, Build: singleByteCharset},
		{Name: "url-decoded-ids", Defect: "URL-form-decodes request ids on the way in ('+' is a space, %2F is '/'), in Append and in the query", MustFail: []string{"ES-1.15"}, Build: urlDecodedIDs},
		{Name: "request-id-glob", Defect: "looks request ids up with an unescaped glob, as SQLite's GLOB or path.Match does ('*' any run, '?' one character, [..] a class), in Append and in the query", MustFail: []string{"ES-1.15"}, Build: requestGlob},
		{Name: "case-insensitive-ids", Defect: "compares ids under a case- and accent-insensitive collation (as MySQL's default utf8mb4_0900_ai_ci): folded case, accents dropped, in aggregate keys and request ids", MustFail: []string{"ES-1.15"}, Build: caseInsensitiveIDs},
		{Name: "nfkc-ids", Defect: "normalizes ids to NFKC on the way in (a ligature, a fullwidth or superscript character becomes its plain form), in aggregate keys and request ids", MustFail: []string{"ES-1.15"}, Build: nfkcIDs},
		{Name: "sha256-32-ids", Defect: "keys request ids by the first 4 bytes of their SHA-256, in Append and in the query", MustFail: []string{"ES-1.15"}, Build: sha256IDs},
		// Calls that fail (issue 37): a failure met with a confident "no".
		{Name: "request-id-fail-open", Defect: "RequestIDExists answers false, nil when its query's context is done (the driver's error swallowed as \"no rows\")", MustFail: []string{"ES-1.16"}, Build: requestFailOpen},
		{Name: "load-fail-open", Defect: "Load answers no streams and no error when its context is done (the driver's error swallowed as an empty result)", MustFail: []string{"ES-1.16"}, Build: loadFailOpen},
		{Name: "int16-version", Defect: "keeps versions in a SMALLINT column in non-strict mode: a version past 32767 is stored as 32767 (and collides with it)", MustFail: []string{"ES-1.17"}, Build: int16Version},
		{Name: "uint16-version", Defect: "keeps versions in an unsigned 16-bit column: version 65536 is stored as 0, 65537 as 1 (and collides with it)", MustFail: []string{"ES-1.17"}, Build: uint16Version},
		{Name: "int16-event-position", Defect: "numbers the events of an aggregate in a SMALLINT position column that wraps: positions past 32767 are negative, and Load, ordered by position, returns them first", MustFail: []string{"ES-1.18"}, Build: int16EventPosition},
		{Name: "event-cap-65535", Defect: "Load returns at most 65535 events of an aggregate (a uint16 count or LIMIT): the rest of the history is left out", MustFail: []string{"ES-1.18"}, Build: eventCap65535},
		{Name: "precheck-fail-open", Defect: "Append's own request-id check (no unique constraint behind it) takes a query failed with its context for \"not found\", and the insert, which does not watch the context, goes on", MustFail: []string{"ES-1.16"}, Build: appendCheckFailsOpen},
	}
}

// Caps is what every mutant declares: the reference's declaration, with the
// pre-check chain broken for the two pre-check mutants.
func (fl Flaw) Caps() es.Capabilities {
	switch fl {
	case preCheckTrustsFast:
		return es.Capabilities{PreCheck: func(f es.FastChecker, _ es.ExistenceChecker) es.PreChecker { return trustFast{f} }}
	case preCheckFailsOpen:
		return es.Capabilities{PreCheck: func(f es.FastChecker, a es.ExistenceChecker) es.PreChecker { return failOpen{f, a} }}
	}
	return es.Capabilities{PreCheck: precheck.New}
}

// NewDB makes the shared state for one mutant target.
func (fl Flaw) NewDB() *DB {
	return &DB{flaw: fl, streams: map[string][]es.Stream{}, reqs: map[string]map[string]time.Time{}, lru: map[string]*list.Element{}, lruOrder: list.New(), cols: map[string]map[int]bool{}}
}

// DB is the shared state; see memory.DB, of which it is a copy with flaws.
type DB struct {
	flaw    Flaw
	mu      sync.Mutex
	streams map[string][]es.Stream
	reqs    map[string]map[string]time.Time // request ids per key, with when they were stored
	// The request-id-lru mutant's cache: keys, most recently used first.
	lru      map[string]*list.Element
	lruOrder *list.List
	// The 16-bit version mutants' column values per aggregate, as the
	// primary key (aggregate, version) holds them.
	cols map[string]map[int]bool
}

// Open returns a handle.
func (db *DB) Open() es.EventStore {
	return &store{db: db, tails: map[string]int{}, wrote: map[string]bool{}}
}

type store struct {
	db           *DB
	eskit.Handle // closed flag; Close
	// What the per-handle mutants cache (under db.mu).
	tails map[string]int
	wrote map[string]bool
}

// key is the aggregate's key: its parts quoted, so that no two identities
// share one, except by the mutant's flaw.
func (db *DB) key(a es.AggregateID) string {
	switch db.flaw {
	case tenantlessKey:
		return strconv.Quote(a.Context) + strconv.Quote(a.Name) + strconv.Quote(a.ID)
	case idColumnWidth:
		if r := []rune(a.ID); len(r) > idWidth {
			a.ID = string(r[:idWidth])
		}
	case caseFolding:
		a.Context, a.Name, a.ID, a.Tenant = strings.ToLower(a.Context), strings.ToLower(a.Name), strings.ToLower(a.ID), strings.ToLower(a.Tenant)
	case delimiterJoin:
		return strings.Join([]string{a.Context, a.Name, a.ID, a.Tenant}, ":")
	case nameIdentifier:
		if len(a.Name) > nameBytes {
			a.Name = strings.ToValidUTF8(a.Name[:nameBytes], "")
		}
	case sanitizedKey:
		a.Context, a.Name, a.ID, a.Tenant = sanitize(a.Context), sanitize(a.Name), sanitize(a.ID), sanitize(a.Tenant)
	case singleByteCharset:
		a.Context, a.Name, a.ID, a.Tenant = latin1(a.Context), latin1(a.Name), latin1(a.ID), latin1(a.Tenant)
	case caseInsensitiveIDs:
		a.Context, a.Name, a.ID, a.Tenant = foldAI(a.Context), foldAI(a.Name), foldAI(a.ID), foldAI(a.Tenant)
	case nfkcIDs:
		a.Context, a.Name, a.ID, a.Tenant = norm.NFKC.String(a.Context), norm.NFKC.String(a.Name), norm.NFKC.String(a.ID), norm.NFKC.String(a.Tenant)
	}
	return strconv.Quote(a.Context) + strconv.Quote(a.Name) + strconv.Quote(a.ID) + strconv.Quote(a.Tenant)
}

// reqKey is where request ids are kept unique.
func (db *DB) reqKey(a es.AggregateID) string {
	switch db.flaw {
	case requestPerType:
		return strconv.Quote(a.Context) + strconv.Quote(a.Name)
	}
	return db.key(a)
}

// sanitize replaces what a topic or file name cannot hold.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, s)
}

// reqName is a request id as the request-id column compares it.
func (db *DB) reqName(id string) string {
	switch db.flaw {
	case requestPadSpace:
		return strings.TrimRight(id, " ")
	case requestHashCode:
		return strconv.Itoa(int(javaHash(id)))
	case singleByteCharset:
		return latin1(id)
	case urlDecodedIDs:
		if d, err := url.QueryUnescape(id); err == nil {
			return d
		}
	case caseInsensitiveIDs:
		return foldAI(id)
	case nfkcIDs:
		return norm.NFKC.String(id)
	case sha256IDs:
		h := sha256.Sum256([]byte(id))
		return hex.EncodeToString(h[:4])
	}
	return id
}

// foldAI is s as an accent- and case-insensitive collation compares it:
// decomposed, its combining marks dropped, case folded (full folding: "ß"
// is "ss"). MySQL's utf8mb4_0900_ai_ci compares at the UCA's primary
// level, which ignores both.
func foldAI(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), cases.Fold(), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		return s
	}
	return out
}

// globMatch is SQLite's `stored GLOB pattern`, the pattern the looked-up
// id unescaped: '*', '?' and [..] as path.Match reads them, a backslash an
// ordinary character (GLOB has no escape); a malformed pattern matches
// nothing.
func globMatch(stored, pattern string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, `\`, `\\`), stored)
	return err == nil && ok
}

// javaHash is Java's String.hashCode, over UTF-16 code units.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// latin1 is s through a single-byte (Latin-1) column: what it cannot hold
// becomes '?'.
func latin1(s string) string {
	return strings.Map(func(r rune) rune {
		if r > 0xff {
			return '?'
		}
		return r
	}, s)
}

// likeMatch is `stored LIKE pattern` without an ESCAPE clause: '_' is any
// one character, '%' any run, the rest literal.
func likeMatch(stored, pattern string) bool {
	var re strings.Builder
	re.WriteString(`(?s)^`)
	for _, r := range pattern {
		switch r {
		case '_':
			re.WriteString(".")
		case '%':
			re.WriteString(".*")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), stored)
	return err == nil && ok
}

// lruSeen looks a request id up in the LRU cache and puts it there: the
// cache, not the table, decides.
func (db *DB) lruSeen(st es.Stream) bool {
	k := db.reqKey(st.Aggregate) + strconv.Quote(st.RequestID)
	if e, ok := db.lru[k]; ok {
		db.lruOrder.MoveToFront(e)
		return true
	}
	return false
}

func (db *DB) lruPut(st es.Stream) {
	k := db.reqKey(st.Aggregate) + strconv.Quote(st.RequestID)
	db.lru[k] = db.lruOrder.PushFront(k)
	size := lruSize
	if db.flaw == requestLRULarge {
		size = lruLargeSize
	}
	if db.lruOrder.Len() > size {
		delete(db.lru, db.lruOrder.Remove(db.lruOrder.Back()).(string))
	}
}

// recentSeen: the request id is among those of the aggregate's newest
// streams.
func (db *DB) recentSeen(st es.Stream) bool {
	h := db.streams[db.verKey(st.Aggregate)]
	for _, s := range h[max(0, len(h)-recentWindow):] {
		if s.RequestID == st.RequestID {
			return true
		}
	}
	return false
}

// verKey is where versions are kept unique.
func (db *DB) verKey(a es.AggregateID) string {
	if db.flaw == versionPerType {
		return strconv.Quote(a.Context) + strconv.Quote(a.Name)
	}
	return db.key(a)
}

func (s *store) Append(ctx context.Context, st es.Stream) error {
	err := s.append(ctx, st)
	return s.db.mapError(err)
}

func (db *DB) mapError(err error) error {
	if err == nil {
		return nil
	}
	switch db.flaw {
	case stringErrors:
		if errors.Is(err, es.ErrConflict) {
			return errors.New(err.Error())
		}
	case everythingVersionConflict:
		return &es.VersionConflictError{}
	}
	return err
}

func (s *store) append(ctx context.Context, st es.Stream) error {
	switch s.db.flaw {
	case appendCheckFailsOpen:
		return s.appendCheckFailsOpen(ctx, st)
	case int16Version, uint16Version:
		return s.appendNarrowVersion(ctx, st)
	}
	if err := s.Usable(ctx); err != nil {
		return err
	}
	db := s.db
	switch {
	case db.flaw == versionZeroAny && st.Version <= 0:
		// The defect: no version is "append wherever the tail is".
		db.mu.Lock()
		st.Version = db.tail(st.Aggregate) + 1
		db.mu.Unlock()
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	switch db.flaw {
	case requestCheckThenWrite:
		// The defect: the request-id check runs in its own critical
		// section, as an application-level pre-check would.
		db.mu.Lock()
		dup := db.seen(st.Aggregate, st.RequestID)
		db.mu.Unlock()
		if dup {
			return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.checkVersion(st); err != nil {
			return err
		}
		db.write(st)
		return nil
	case versionCheckThenWrite:
		db.mu.Lock()
		err := db.checkVersion(st)
		db.mu.Unlock()
		if err != nil {
			return err
		}
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.checkRequest(st); err != nil {
			return err
		}
		db.overwrite(st)
		return nil
	case tailPerHandle:
		db.mu.Lock()
		defer db.mu.Unlock()
		k := db.verKey(st.Aggregate)
		tail, cached := s.tails[k]
		if !cached {
			tail = db.tail(st.Aggregate)
		}
		switch {
		case st.Version == es.InitialVersion && tail > 0:
			return &es.DuplicateAggregateIDError{Aggregate: st.Aggregate, RequestID: st.RequestID}
		case st.Version != tail+1:
			return &es.VersionConflictError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		if err := db.checkRequest(st); err != nil {
			return err
		}
		db.write(st) // no version constraint in the table: the cache was the check
		s.tails[k] = st.Version
		return nil
	case uniquenessPerHandle:
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.checkVersionOnly(st); err != nil {
			return err
		}
		rk := db.reqKey(st.Aggregate) + strconv.Quote(st.RequestID)
		if s.wrote[rk] {
			return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		db.write(st)
		s.wrote[rk] = true
		return nil
	case requestLRU, requestLRULarge, requestRecent:
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.checkVersionOnly(st); err != nil {
			return err
		}
		// The defect: a bounded memory in front of the write decides
		// whether the request id is new.
		lru := db.flaw == requestLRU || db.flaw == requestLRULarge
		if lru && db.lruSeen(st) || db.flaw == requestRecent && db.recentSeen(st) {
			return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		db.write(st)
		if lru {
			db.lruPut(st)
		}
		return nil
	case tornLoad:
		db.mu.Lock()
		if err := db.checkVersion(st); err != nil {
			db.mu.Unlock()
			return err
		}
		if err := db.checkRequest(st); err != nil {
			db.mu.Unlock()
			return err
		}
		db.remember(st)
		k := db.verKey(st.Aggregate)
		first := st
		first.Events = st.Events[:1]
		db.streams[k] = append(db.streams[k], db.stored(first))
		db.mu.Unlock()
		// The defect: each further event is its own write, visible at once.
		for _, e := range st.Events[1:] {
			time.Sleep(20 * time.Microsecond) // one round trip to the database
			db.mu.Lock()
			h := db.streams[k]
			for i := range h {
				if h[i].CommandID == st.CommandID {
					h[i].Events = append(h[i].Events, es.Event{Name: e.Name, Body: append([]byte(nil), e.Body...)})
				}
			}
			db.mu.Unlock()
		}
		return nil
	case eventByEvent:
		db.mu.Lock()
		defer db.mu.Unlock()
		if err := db.checkVersionOnly(st); err != nil {
			return err
		}
		// The defect: each event is written as it comes, and the request
		// id is only checked "at commit", with nothing to roll back.
		for i := range st.Events {
			part := st
			part.Events = []es.Event{st.Events[i]}
			db.streams[db.verKey(st.Aggregate)] = appendMerged(db.streams[db.verKey(st.Aggregate)], part)
		}
		if err := db.checkRequest(st); err != nil {
			return err
		}
		db.remember(st)
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.checkVersion(st); err != nil {
		if db.flaw == leakedReservation && !errors.As(err, new(*es.DuplicateRequestIDError)) {
			db.remember(st) // reserved before the version check, never released
		}
		return err
	}
	if err := db.checkRequest(st); err != nil {
		if db.flaw == silentDedupe {
			return nil
		}
		return err
	}
	db.write(st)
	return nil
}

// appendCheckFailsOpen is Append whose request-id check is a query under
// the caller's context, its failure read as "not found", and whose write is
// not under that context (as an insert made on a context of its own, so
// that a write is never half done). The context is consulted nowhere else.
func (s *store) appendCheckFailsOpen(ctx context.Context, st es.Stream) error {
	if err := s.Usable(context.Background()); err != nil {
		return err // the closed flag only
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	db := s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.checkVersionOnly(st); err != nil {
		return err
	}
	// The defect: a failed query is "no such request id".
	if ctx.Err() == nil && db.seen(st.Aggregate, st.RequestID) {
		return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
	}
	db.write(st)
	return nil
}

// column is a version as the 16-bit mutants' version column holds it.
func (db *DB) column(v int) int {
	switch db.flaw {
	case int16Version:
		return min(v, 1<<15-1) // SMALLINT, non-strict: out of range saturates
	case uint16Version:
		return v & 0xffff
	}
	return v
}

// appendNarrowVersion is an SQL store's append over a narrow version
// column: the predecessor's row must exist (tail+1), the primary key
// (aggregate, version) must be free, both in column values.
func (s *store) appendNarrowVersion(ctx context.Context, st es.Stream) error {
	if err := s.Usable(ctx); err != nil {
		return err
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	db := s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	k := db.verKey(st.Aggregate)
	if st.Version == es.InitialVersion && len(db.streams[k]) > 0 {
		return db.checkVersion(st) // the creation conflict, as the reference
	}
	cols := db.cols[k]
	if st.Version > es.InitialVersion && !cols[db.column(st.Version-1)] || cols[db.column(st.Version)] {
		return &es.VersionConflictError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
	}
	if err := db.checkRequest(st); err != nil {
		return err
	}
	if cols == nil {
		cols = map[int]bool{}
		db.cols[k] = cols
	}
	cols[db.column(st.Version)] = true
	st.Version = db.column(st.Version)
	db.write(st)
	return nil
}

func (db *DB) tail(a es.AggregateID) int {
	h := db.streams[db.verKey(a)]
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].Version
}

// checkVersion is the reference's creation and version check (plus the
// exact-retry preference for DuplicateRequestID).
func (db *DB) checkVersion(st es.Stream) error {
	tail := db.tail(st.Aggregate)
	if st.Version == es.InitialVersion && tail > 0 {
		if db.seen(st.Aggregate, st.RequestID) && db.flaw != silentDedupe {
			return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		if db.flaw == createAsVersionConflict {
			return &es.VersionConflictError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
		}
		if db.flaw == storedRequestInCreate {
			return &es.DuplicateAggregateIDError{Aggregate: st.Aggregate, RequestID: db.streams[db.verKey(st.Aggregate)][0].RequestID}
		}
		if db.flaw == silentDedupe {
			if _, dup := db.reqs[db.reqKey(st.Aggregate)][st.RequestID]; dup {
				return nil // and checkRequest swallows it
			}
		}
		return &es.DuplicateAggregateIDError{Aggregate: st.Aggregate, RequestID: st.RequestID}
	}
	return db.checkVersionOnly(st)
}

func (db *DB) checkVersionOnly(st es.Stream) error {
	tail := db.tail(st.Aggregate)
	if st.Version == es.InitialVersion && tail > 0 {
		return &es.DuplicateAggregateIDError{Aggregate: st.Aggregate, RequestID: st.RequestID}
	}
	ok := st.Version == tail+1
	if db.flaw == silentGap {
		ok = st.Version > tail
	}
	if !ok {
		if db.flaw == tailAsVersion {
			return &es.VersionConflictError{Aggregate: st.Aggregate, Version: tail, RequestID: st.RequestID}
		}
		return &es.VersionConflictError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
	}
	return nil
}

// seen: the aggregate holds a stream with this request id, as far as the
// store remembers.
func (db *DB) seen(a es.AggregateID, requestID string) bool {
	if db.flaw == requestWindow {
		h := db.streams[db.verKey(a)]
		for _, st := range h[max(0, len(h)-window):] {
			if st.RequestID == requestID {
				return true
			}
		}
		return false
	}
	if db.flaw == requestLike || db.flaw == requestGlob {
		// The defect: the lookup is a pattern, the id not escaped.
		match := likeMatch
		if db.flaw == requestGlob {
			match = globMatch
		}
		for stored := range db.reqs[db.reqKey(a)] {
			if stored == requestID || match(stored, requestID) {
				return true
			}
		}
		return false
	}
	at, ok := db.reqs[db.reqKey(a)][db.reqName(requestID)]
	if ok && db.flaw == requestTTL && time.Since(at) > requestTTLFor || ok && db.flaw == requestTTLLong && time.Since(at) > requestTTLLongFor {
		return false
	}
	return ok
}

func (db *DB) checkRequest(st es.Stream) error {
	if db.seen(st.Aggregate, st.RequestID) {
		return &es.DuplicateRequestIDError{Aggregate: st.Aggregate, Version: st.Version, RequestID: st.RequestID}
	}
	return nil
}

func (db *DB) remember(st es.Stream) {
	k := db.reqKey(st.Aggregate)
	if db.reqs[k] == nil {
		db.reqs[k] = map[string]time.Time{}
	}
	db.reqs[k][db.reqName(st.RequestID)] = time.Now()
}

func (db *DB) write(st es.Stream) {
	db.remember(st)
	k := db.verKey(st.Aggregate)
	db.streams[k] = append(db.streams[k], db.stored(st))
}

// overwrite stores by version, replacing whatever a racing writer put there.
func (db *DB) overwrite(st es.Stream) {
	db.remember(st)
	k := db.verKey(st.Aggregate)
	h := db.streams[k]
	for i := range h {
		if h[i].Version == st.Version {
			h[i] = db.stored(st)
			return
		}
	}
	db.streams[k] = append(h, db.stored(st))
}

// appendMerged adds one event, merging it into the stream of its version.
func appendMerged(h []es.Stream, part es.Stream) []es.Stream {
	if n := len(h); n > 0 && h[n-1].Version == part.Version && h[n-1].CommandID == part.CommandID {
		h[n-1].Events = append(h[n-1].Events, part.Events...)
		return h
	}
	return append(h, part)
}

func (db *DB) stored(st es.Stream) es.Stream {
	c := st
	c.Events = make([]es.Event, len(st.Events))
	for i, e := range st.Events {
		body := append([]byte(nil), e.Body...)
		if db.flaw == truncatedBodies && len(body) > bodyWidth {
			body = body[:bodyWidth]
		}
		if db.flaw == lossyBytes {
			body = []byte(strings.ToValidUTF8(string(body), "\uFFFD"))
		}
		c.Events[i] = es.Event{Name: e.Name, Body: body}
	}
	return c
}

// usable is Usable, except that the close-only-append mutant forgets the
// closed flag outside Append.
func (s *store) usable(ctx context.Context) error {
	if s.db.flaw == closeOnlyAppend {
		return ctx.Err()
	}
	return s.Usable(ctx)
}

func (s *store) Load(ctx context.Context, agg es.AggregateID, from, to int) ([]es.Stream, error) {
	if s.db.flaw == loadFailOpen && ctx.Err() != nil {
		return nil, nil // the defect: the driver's error read as an empty result
	}
	if err := s.usable(ctx); err != nil {
		return nil, s.db.mapError(err)
	}
	if err := eskit.ValidateRange(from, to); err != nil {
		return nil, s.db.mapError(err)
	}
	db := s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	h, ok := db.streams[db.verKey(agg)]
	if !ok && db.flaw == unknownIsError {
		return nil, fmt.Errorf("aggregate %s not found", agg)
	}
	var out []es.Stream
	for _, st := range h {
		in := st.Version >= from && st.Version <= to
		if db.flaw == exclusiveRange {
			in = st.Version >= from && st.Version < to
		}
		if in && (db.flaw != versionPerType || st.Aggregate == agg) {
			out = append(out, db.stored(st))
		}
	}
	if db.flaw == loadFirstPage {
		out = firstPage(out)
	}
	if db.flaw == int16Version || db.flaw == uint16Version {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Version < out[j].Version }) // ORDER BY version
	}
	switch db.flaw {
	case int16EventPosition:
		out = byInt16Position(h, out)
	case eventCap65535:
		out = capEvents(out, 1<<16-1)
	}
	return out, nil
}

// byInt16Position is out as a store returns it that numbers each event's
// position in the aggregate (h, its whole history) in a SMALLINT that
// wraps: ORDER BY position puts the positions past 32767 (negative) first,
// ties in the order stored; the rows of one version in a run are one
// stream.
func byInt16Position(h, out []es.Stream) []es.Stream {
	first := map[int]int{} // version: the position of its first event
	p := 1
	for _, st := range h {
		first[st.Version] = p
		p += len(st.Events)
	}
	type row struct {
		pos int16
		st  int
		ev  es.Event
	}
	var rows []row
	for i, st := range out {
		for j, e := range st.Events {
			rows = append(rows, row{int16(first[st.Version] + j), i, e})
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].pos < rows[b].pos })
	var res []es.Stream
	last := -1
	for _, rw := range rows {
		if rw.st == last {
			res[len(res)-1].Events = append(res[len(res)-1].Events, rw.ev)
			continue
		}
		st := out[rw.st]
		st.Events = []es.Event{rw.ev}
		res = append(res, st)
		last = rw.st
	}
	return res
}

// capEvents keeps the first n events of h, as a query with LIMIT n does.
func capEvents(h []es.Stream, n int) []es.Stream {
	for i := range h {
		if len(h[i].Events) >= n {
			h[i].Events = h[i].Events[:n]
			return h[:i+1]
		}
		n -= len(h[i].Events)
	}
	return h
}

func (s *store) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if s.db.flaw == requestFailOpen && ctx.Err() != nil {
		return false, nil // the defect: the driver's error read as "no rows"
	}
	if err := s.usable(ctx); err != nil {
		return false, s.db.mapError(err)
	}
	db := s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	switch db.flaw {
	case existsLatestStream:
		h := db.streams[db.verKey(agg)]
		return len(h) > 0 && h[len(h)-1].RequestID == requestID, nil
	case existsIgnoresContext, existsIgnoresName, existsIgnoresTenant:
		for _, h := range db.streams {
			for _, st := range h {
				if st.RequestID == requestID && db.sameIgnoring(st.Aggregate, agg) {
					return true, nil
				}
			}
		}
		return false, nil
	}
	if db.flaw == brokenExists {
		for _, ids := range db.reqs {
			if _, ok := ids[requestID]; ok {
				return true, nil
			}
		}
		return false, nil
	}
	return db.seen(agg, requestID), nil
}

// firstPage keeps the first pageSize events (rows), cutting the stream the
// page ends in.
func firstPage(h []es.Stream) []es.Stream {
	n := 0
	for i := range h {
		if n+len(h[i].Events) > pageSize {
			if n < pageSize {
				h[i].Events = h[i].Events[:pageSize-n]
				return h[:i+1]
			}
			return h[:i]
		}
		n += len(h[i].Events)
	}
	return h
}

// sameIgnoring compares two identities without the field the mutant's
// query forgets.
func (db *DB) sameIgnoring(a, b es.AggregateID) bool {
	switch db.flaw {
	case existsIgnoresContext:
		a.Context, b.Context = "", ""
	case existsIgnoresName:
		a.Name, b.Name = "", ""
	case existsIgnoresTenant:
		a.Tenant, b.Tenant = "", ""
	}
	return a == b
}

// trustFast rejects whatever the fast checker calls a maybe.
type trustFast struct{ fast es.FastChecker }

func (t trustFast) Admit(_ context.Context, agg es.AggregateID, id string) (bool, error) {
	return !t.fast.MaybeDuplicate(agg, id), nil
}

// failOpen asks the authority when it has one, and admits otherwise.
type failOpen struct {
	fast      es.FastChecker
	authority es.ExistenceChecker
}

func (f failOpen) Admit(ctx context.Context, agg es.AggregateID, id string) (bool, error) {
	if !f.fast.MaybeDuplicate(agg, id) || f.authority == nil {
		return true, nil
	}
	exists, err := f.authority.RequestIDExists(ctx, agg, id)
	if err != nil {
		return true, nil
	}
	return !exists, nil
}
