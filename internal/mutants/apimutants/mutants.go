// Package apimutants holds deliberately broken versions of the api reference
// service, each with one real-world defect, for the self-test: every API
// rule must be failed by at least one of them.
package apimutants

import (
	"context"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/apiservice"
	"github.com/onceproof/tck/internal/mutants"
)

// Mutant is one broken service.
type Mutant = mutants.Mutant[Service]

// Service is the reference service with one defect, answering under a
// contract.
type Service struct {
	Contract apidesc.Contract
	defect   apiservice.Defect
}

// Start starts the service on a free loopback port.
func (s Service) Start(ctx context.Context) (*apiservice.Server, error) {
	return apiservice.Start(ctx, s.Contract, s.defect)
}

// Description is the endpoint description the service implements: the
// default one, or (a defect that needs letters no header carries) the id
// in the body.
func (s Service) Description() *apidesc.Description {
	return apiservice.Description(s.Contract, s.defect)
}

// All returns the mutants, in the order the self-test runs them.
func All() []Mutant {
	return []Mutant{
		{Name: "check-then-insert", Build: Service{apidesc.Reject409, apiservice.CheckThenInsert}, MustFail: []string{"API-2.1"},
			Defect: "looks the key up, then inserts a row under its own id with no unique constraint: requests racing with one key both pass the look-up"},
		{Name: "overwrite", Build: Service{apidesc.Reject409, apiservice.Overwrite}, MustFail: []string{"API-1.2", "API-1.3"},
			Defect: "treats a repeated key as an upsert: the repeat answers 200 and replaces the original"},
		{Name: "server-ids", Build: Service{apidesc.Reject409, apiservice.ServerIDs}, MustFail: []string{"API-1.2", "API-2.1", "API-3.1"},
			Defect: "keys orders by an id it generates and only records the client's key: every repeat is a new order"},
		{Name: "memory-replay", Build: Service{apidesc.Replay, apiservice.MemoryReplay}, MustFail: []string{"API-1.5"},
			Defect: "keeps the responses it replays in process memory: after a restart a repeat is a 409 instead of the replay"},
		{Name: "text-500", Build: Service{apidesc.Reject409, apiservice.Text500}, MustFail: []string{"API-1.2", "API-4.1"},
			Defect: "answers a duplicate with the database's unique-constraint error as a 500 text/plain"},
		{Name: "stale-read", Build: Service{apidesc.Reject409, apiservice.StaleRead}, MustFail: []string{"API-1.1"},
			Defect: "serves reads by id from a cache that keeps a miss: an order read before it existed stays 404"},
		{Name: "unscoped", Build: Service{apidesc.Reject409, apiservice.Unscoped}, MustFail: []string{"API-1.4"},
			Defect: "ignores the tenant in the key: the same id under another tenant is refused as a repeat"},
		{Name: "content-dedupe", Build: Service{apidesc.Reject409, apiservice.ContentDedupe}, MustFail: []string{"API-3.2"},
			Defect: "de-dupes by a fingerprint of the payload: a new intent with an identical payload is refused"},

		// Issue 20: fresh defects the earlier tame values and schedules let through.
		{Name: "forget-keys", Build: Service{apidesc.Reject409, apiservice.ForgetKeys}, MustFail: []string{"API-5.2"},
			Defect: "keeps a key for 2 s (a cache with a time-to-live): a later repeat is a new creation"},
		{Name: "forget-keys-4s", Build: Service{apidesc.Reject409, apiservice.ForgetKeysLater}, MustFail: []string{"API-5.2"},
			Defect: "keeps a key for 4 s (a key memory with a longer time-to-live, far short of the declared 24 h): a repeat after 4 s is a new creation"},
		{Name: "response-after-commit", Build: Service{apidesc.Replay, apiservice.ResponseAfterCommit}, MustFail: []string{"API-5.3"},
			Defect: "commits the order, then stores the response to replay in a second transaction: killed between the two, the key is answered as in flight for ever"},
		{Name: "partial-fingerprint", Build: Service{apidesc.Replay, apiservice.PartialFingerprint}, MustFail: []string{"API-1.3", "API-4.1"},
			Defect: "fingerprints a payload by one field (qty): another payload that differs in another field is replayed, not refused"},
		{Name: "lower-keys", Build: Service{apidesc.Reject409, apiservice.LowerKeys}, MustFail: []string{"API-1.6"},
			Defect: "folds keys to lower case (a case-insensitive collation): two keys that differ in case are one"},
		{Name: "cut-keys", Build: Service{apidesc.Reject409, apiservice.CutKeys}, MustFail: []string{"API-1.6"},
			Defect: "keeps the first 32 bytes of a key (a CHAR(32) column): keys that share them are one"},
		{Name: "joined-keys", Build: Service{apidesc.Reject409, apiservice.JoinedKeys}, MustFail: []string{"API-1.6"},
			Defect: "keys orders by tenant+key joined without a separator: (ab, c) and (a, bc) are one"},
		{Name: "tenant-from-body", Build: Service{apidesc.Reject409, apiservice.TenantFromBody}, MustFail: []string{"API-1.4"},
			Defect: "takes the tenant of a create from the body's tenant field when it has one, over the declared X-Tenant header"},
		{Name: "drop-location", Build: Service{apidesc.Replay, apiservice.DropLocation}, MustFail: []string{"API-1.2", "API-5.1"},
			Defect: "replays the status and body of the first response but not its Location header"},
		{Name: "lagging-reads", Build: Service{apidesc.Reject409, apiservice.LaggingReads}, MustFail: []string{"API-1.1", "API-5.1"},
			Defect: "serves reads from a view 1 s behind the writes (an asynchronous read replica)"},

		// Issue 37: defects caught by structure (values that decode or hash
		// alike, every replica probed), not by volume.
		{Name: "url-decoded-keys", Build: Service{apidesc.Reject409, apiservice.URLDecodedKeys}, MustFail: []string{"API-1.6"},
			Defect: "percent-decodes the key before storing it: a%2Bb and a+b are one key"},
		{Name: "hashcode-keys", Build: Service{apidesc.Reject409, apiservice.HashCodeKeys}, MustFail: []string{"API-1.6"},
			Defect: "keys orders by the key's Java String.hashCode: Aa and BB (and AaAa, BBBB inside longer keys) are one key"},
		{Name: "replica-lower-keys", Build: Service{apidesc.Reject409, apiservice.ReplicaLowerKeys}, MustFail: []string{"API-1.6"},
			Defect: "the second replica folds keys to lower case (the first is correct): a key created on one replica is another key on the other"},
		{Name: "replica-fast-clock", Build: Service{apidesc.Reject409, apiservice.ReplicaFastClock}, MustFail: []string{"API-5.2"},
			Defect: "the second replica's clock runs 25 h fast (the first is correct): with the declared retention of 24 h it takes every key the other stored as expired and creates anew"},
		{Name: "case-sensitive-header", Build: Service{apidesc.Reject409, apiservice.CaseSensitiveHeader}, MustFail: []string{"API-1.2"},
			Defect: "matches the Idempotency-Key and X-Tenant header names exactly (a gateway or a hand-written parser): idempotency-key or IDEMPOTENCY-KEY is no key, x-tenant no tenant"},
		{Name: "like-keys", Build: Service{apidesc.Reject409, apiservice.LikeKeys}, MustFail: []string{"API-1.6"},
			Defect: "finds an order by its key with SQL LIKE and the key unescaped (WHERE key LIKE ?): order_1 finds orderX1, order% finds order-12"},
		{Name: "latin1-keys", Build: Service{apidesc.Reject409, apiservice.Latin1Keys}, MustFail: []string{"API-1.6"},
			Defect: "keeps keys in a Latin-1 column, a letter outside it stored as ?: ids differing only in Greek, Cyrillic or CJK letters or an emoji are one (its id travels in the body: no header carries such letters)"},
		{Name: "glob-keys", Build: Service{apidesc.Reject409, apiservice.GlobKeys}, MustFail: []string{"API-1.6"},
			Defect: "finds an order by its key with SQLite GLOB and the key unescaped: order? finds order1, order[12] finds order1"},

		// Issue 37: failures of the service's own store (API-6.1), which
		// the kit controls for its in-process service.
		{Name: "lookup-fails-open", Build: Service{apidesc.Reject409, apiservice.LookupFailsOpen}, MustFail: []string{"API-6.1"},
			Defect: "looks the key up first and takes a failed look-up (cancelled, timed out) for \"no such key\", then appends the creation with expected version any: a repeat whose look-up fails is a second creation"},
		{Name: "created-on-failed-write", Build: Service{apidesc.Replay, apiservice.CreatedOnFailedWrite}, MustFail: []string{"API-6.1"},
			Defect: "logs a failed write and answers 201 anyway: an order that was never stored is reported created"},
		{Name: "missing-on-failed-read", Build: Service{apidesc.Reject409, apiservice.MissingOnFailedRead}, MustFail: []string{"API-6.1"},
			Defect: "answers a read whose store call failed with 404 (and a list with none): a confident \"no such order\" it could not know"},
	}
}
