// Package consumer holds examples of a backend team's own consumers checked
// by the kit, each with the test that checks it:
//
//   - Projection (projection.go): a search projection that keeps one
//     document per message at its newest version. It declares one scope
//     (search-index) and relies on the index's conditional, versioned
//     upsert alone: a redelivery, a replay or a second worker writes the
//     same version again, which changes nothing, and an older version
//     never wins. It acks only after the write.
//   - SQLiteDedupe (dedupe.go): both scopes, its de-dupe records in a
//     SQLite file of its own, every effect before the ack.
//   - TaskQueue (taskqueue.go): both scopes handed to a durable task queue
//     before the ack, done by a worker of its own about 50 ms later.
//
// Copy this folder into a module of your own; the _test.go files show the
// one call that checks each.
package consumer

import (
	"context"

	"github.com/onceproof/tck/co"
)

// Projection is one instance.
type Projection struct {
	index co.Index
}

// New is the factory the kit calls at start and after every crash.
func New(_ context.Context, env co.Env) (co.Consumer, error) {
	return &Projection{index: env.Index}, nil
}

// Declared is what the projection says about itself.
var Declared = co.Declared{Scopes: []string{co.ScopeIndex}}

// Handle writes the event's version of the document, then acks.
func (p *Projection) Handle(ctx context.Context, d co.Delivery) error {
	e := d.Event()
	if _, err := p.index.Upsert(ctx, co.Doc{ID: e.MessageID, Version: e.Version, Body: e.Body}); err != nil {
		return err
	}
	return d.Ack(ctx)
}
