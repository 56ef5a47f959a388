// Package comutants holds deliberately broken consumers and outboxes, each a
// few lines from the reference, for the self-test: every CO rule must be
// failed by at least one of them, and each must fail the rules it names.
package comutants

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/mutants"
	"github.com/onceproof/tck/internal/outbox"
)

// Mutant is one broken consumer design (or a reference consumer behind a
// broken outbox).
type Mutant = mutants.Mutant[Consumer]

// Consumer is what a mutant is built from.
type Consumer struct {
	Design reference.Design
	Outbox co.Outbox // nil: the reference outbox
}

// All lists the mutants.
func All() []Mutant {
	ref := reference.Reference
	with := func(f func(*reference.Design)) reference.Design { d := ref(); f(&d); return d }
	return []Mutant{
		{Name: "dedupe-message-id", MustFail: []string{"CO-1.2", "CO-5.1"},
			Defect: "de-dupe key is (message id, scope): the edit v2 is dropped as a duplicate of v1",
			Build: Consumer{Design: with(func(d *reference.Design) {
				d.Key = func(e co.Event, scope string) string { return fmt.Sprintf("dedupe/%s/%s", e.MessageID, scope) }
			})}},
		{Name: "shared-flag", MustFail: []string{"CO-1.3"},
			Defect: "one \"processed\" flag per (message, version) shared by all scopes: the index marks the notification done",
			Build: Consumer{Design: with(func(d *reference.Design) {
				d.Key = func(e co.Event, _ string) string {
					return fmt.Sprintf("processed/%s/v%d", e.MessageID, e.Version)
				}
			})}},
		{Name: "short-ttl", MustFail: []string{"CO-3.1"},
			Defect: "de-dupe records live 10 minutes; the redelivery comes at 11",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.Lifetime = 10 * time.Minute })}},
		{Name: "ack-first", MustFail: []string{"CO-2.2"},
			Defect: "acks before the effects: a crash after the ack loses them",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.AckFirst = true })}},
		{Name: "check-then-write", MustFail: []string{"CO-1.5", "CO-2.3"},
			Defect: "reads the de-dupe record, does the effect, then writes the record: no claim, no recovery",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.CheckThenWrite = true })}},
		{Name: "plain-put", MustFail: []string{"CO-1.4", "CO-5.1"},
			Defect: "writes the index with an unconditional put and no record: a stale version wins",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.PlainPut = true })}},
		{Name: "memory-dedupe", MustFail: []string{"CO-2.1", "CO-1.5"},
			Defect: "keeps de-dupe records in the instance's memory: a crash before the ack forgets them",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.Memory = true })}},
		{Name: "guarded-put", MustFail: []string{"CO-1.6"},
			Defect: "writes the index with an unconditional put guarded only by its de-dupe record: an older version first delivered after a newer one has no record yet and wins",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.GuardedPut = true })}},
		{Name: "read-compare-write", MustFail: []string{"CO-1.7"},
			Defect: "reads the index document, compares versions, then writes with an unconditional put: two workers on two versions interleave and the older can win",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.ReadCompareWrite = true })}},
		{Name: "ack-after-failed-effect", MustFail: []string{"CO-2.4"},
			Defect: "ignores a failed effect: marks it done and acks, so an effect that never happened is lost",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.IgnoreEffectErr = true })}},
		{Name: "release-on-error", MustFail: []string{"CO-2.4"},
			Defect: "releases its claim when an effect fails, so the redelivery repeats a notification whose answer was only lost",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.ReleaseOnError = true })}},
		{Name: "mark-then-effect", MustFail: []string{"CO-2.5"},
			Defect: "writes the de-dupe record \"done\" before the effect: a crash between the two loses the effect for good",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.MarkFirst = true })}},
		{Name: "racy-claim", MustFail: []string{"CO-1.5"},
			Defect: "claims by reading the record and then writing it (no atomic insert, no delay): two workers both claim",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.RacyClaim = true })}},
		{Name: "dedupe-per-day", MustFail: []string{"CO-3.1", "CO-5.2"},
			Defect: "keeps its de-dupe records per calendar day (the key names the day on the kit's clock): a redelivery after midnight is done again",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.DayKeyed = true })}},
		{Name: "undo-on-ack-error", MustFail: []string{"CO-2.6"},
			Defect: "rolls a delivery back when its ack call errors (deletes its de-dupe records): the redelivery or a replay notifies again",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.UndoOnAckErr = true })}},
		{Name: "text-versions", MustFail: []string{"CO-1.2", "CO-5.1"},
			Defect: "compares versions as text (\"10\" < \"9\"): the edit from v9 to v10 is skipped as stale",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.TextVersions = true })}},
		{Name: "takeover-any-version", MustFail: []string{"CO-2.5"},
			Defect: "a take-over of a dead instance's claim asks whether any version of the message is there, not this version: a crashed edit is never done",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.AnyVersionSent = true })}},
		{Name: "capped-dedupe", MustFail: []string{"CO-5.2"},
			Defect: "keeps at most 300 de-dupe records per instance, deleting the oldest: a redelivery of an older event is done again",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.Cap = 300 })}},
		{Name: "lru-dedupe", MustFail: []string{"CO-5.2"},
			Defect: "keeps its de-dupe records in a store of 10000 keys shared by its instances, evicting the least recently used (a cache server with an LRU policy): a redelivery of an event 5000 events back is done again",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.LRU = 10000 })}},
		{Name: "give-up-after-two", MustFail: []string{"CO-2.7"},
			Defect: "tries a failed effect call once more in the same delivery (asking the sink first whether it took effect), and after two failures gives the effect up (marks it done and acks): an effect whose call failed twice in a row is lost",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.GiveUpAfter = 2 })}},
		{Name: "dedupe-error-as-miss", MustFail: []string{"CO-2.7"},
			Defect: "takes a failed read of its de-dupe record for \"no record\" (expired: claims the key and does the effect): a redelivery whose read fails is done again",
			Build:  Consumer{Design: with(func(d *reference.Design) { d.ErrAsMiss = true })}},
		{Name: "outbox-direct-publish", MustFail: []string{"CO-4.1"},
			Defect: "the writer commits the business row, then publishes itself, outside the transaction: a crash between loses the event",
			Build:  Consumer{Design: ref(), Outbox: DirectPublish}},
		{Name: "outbox-mark-first", MustFail: []string{"CO-4.1"},
			Defect: "the relay marks a row sent before publishing it: a crash between loses the event",
			Build:  Consumer{Design: ref(), Outbox: MarkFirst}},
	}
}

// DirectPublish is an outbox writer with no outbox: it commits the business
// row and then publishes the event itself. The relay has nothing to do.
func DirectPublish(ctx context.Context, path string, pub co.Publisher, topic string) (co.OutboxWriter, co.OutboxRelay, func() error, error) {
	o, err := outbox.New(path, pub, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	return &direct{o: o, pub: pub, topic: topic}, idle{}, o.Close, nil
}

type direct struct {
	o     *outbox.Outbox
	pub   co.Publisher
	topic string
}

func (d *direct) Submit(ctx context.Context, e co.Event, inTx func() error) error {
	tx, err := d.o.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, version, body) VALUES (?, ?, ?)`, e.MessageID, e.Version, e.Body); err != nil {
		return err
	}
	if inTx != nil {
		if err := inTx(); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = d.pub.Publish(ctx, d.topic, co.Message(e, e.EventID))
	return err
}

type idle struct{}

func (idle) RelayOnce(context.Context) (int, error) { return 0, nil }

// MarkFirst is the reference writer with a relay that marks each row sent
// before it publishes it.
func MarkFirst(ctx context.Context, path string, pub co.Publisher, topic string) (co.OutboxWriter, co.OutboxRelay, func() error, error) {
	o, err := outbox.New(path, pub, topic)
	if err != nil {
		return nil, nil, nil, err
	}
	return o, &markFirst{o: o, pub: pub, topic: topic}, o.Close, nil
}

type markFirst struct {
	o     *outbox.Outbox
	pub   co.Publisher
	topic string
}

func (m *markFirst) RelayOnce(ctx context.Context) (int, error) {
	rows, err := outbox.PendingRows(ctx, m.o.DB)
	if err != nil {
		return 0, err
	}
	for i, p := range rows {
		if err := outbox.MarkSent(ctx, m.o.DB, p.Seq); err != nil {
			return i, err
		}
		var e co.Event
		_ = json.Unmarshal(p.Payload, &e)
		if _, err := m.pub.Publish(ctx, m.topic, co.Message(e, p.EventID)); err != nil {
			return i, err
		}
	}
	return len(rows), nil
}
