// Package apimutants holds deliberately broken versions of the api reference
// service, each with one real-world defect, for the self-test: every API
// rule must be failed by at least one of them.
package apimutants

import (
	"context"

	"github.com/onceproof/tck/internal/apiservice"
	"github.com/onceproof/tck/internal/apidesc"
)

// Mutant is one broken service.
type Mutant struct {
	Name     string
	Defect   string
	Contract apidesc.Contract
	// MustFail are the rule ids the self-test asserts it fails.
	MustFail []string
	defect   apiservice.Defect
}

// Start starts the mutant on a free loopback port.
func (m Mutant) Start(ctx context.Context) (*apiservice.Server, error) {
	return apiservice.Start(ctx, m.Contract, m.defect)
}

// All are the mutants, in the order the self-test runs them.
var All = []Mutant{
	{Name: "check-then-insert", Contract: apidesc.Reject409, defect: apiservice.CheckThenInsert, MustFail: []string{"API-2.1"},
		Defect: "looks the key up, then inserts a row under its own id with no unique constraint: requests racing with one key both pass the look-up"},
	{Name: "overwrite", Contract: apidesc.Reject409, defect: apiservice.Overwrite, MustFail: []string{"API-1.2", "API-1.3"},
		Defect: "treats a repeated key as an upsert: the repeat answers 200 and replaces the original"},
	{Name: "server-ids", Contract: apidesc.Reject409, defect: apiservice.ServerIDs, MustFail: []string{"API-1.2", "API-2.1", "API-3.1"},
		Defect: "keys orders by an id it generates and only records the client's key: every repeat is a new order"},
	{Name: "memory-replay", Contract: apidesc.Replay, defect: apiservice.MemoryReplay, MustFail: []string{"API-1.5"},
		Defect: "keeps the responses it replays in process memory: after a restart a repeat is a 409 instead of the replay"},
	{Name: "text-500", Contract: apidesc.Reject409, defect: apiservice.Text500, MustFail: []string{"API-1.2", "API-4.1"},
		Defect: "answers a duplicate with the database's unique-constraint error as a 500 text/plain"},
	{Name: "stale-read", Contract: apidesc.Reject409, defect: apiservice.StaleRead, MustFail: []string{"API-1.1"},
		Defect: "serves reads by id from a cache that keeps a miss: an order read before it existed stays 404"},
	{Name: "unscoped", Contract: apidesc.Reject409, defect: apiservice.Unscoped, MustFail: []string{"API-1.4"},
		Defect: "ignores the tenant in the key: the same id under another tenant is refused as a repeat"},
	{Name: "content-dedupe", Contract: apidesc.Reject409, defect: apiservice.ContentDedupe, MustFail: []string{"API-3.2"},
		Defect: "de-dupes by a fingerprint of the payload: a new intent with an identical payload is refused"},
}
