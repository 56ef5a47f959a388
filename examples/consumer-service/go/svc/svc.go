// Package svc is the reference consumer service in Go: a real process with
// its own SQLite database, reading a NATS JetStream durable consumer (or a
// Redis stream's consumer group, ONCEPROOF_BROKER=redis; a Kafka partition,
// kafka; a Kafka share group, kafka-share) and
// writing to a search index and a push notifier over HTTP, configured by the
// environment the kit documents (docs/consumer-service.md). Run(Defects{})
// is the reference; each mutant under internal/mutants/coservices is
// a main that runs it with exactly one defect.
//
// Per delivery of event (message m, version v):
//
//  1. one SQLite transaction commits the projection row (m at the newest
//     version seen) and the processed-event row (the event id) together;
//  2. the index write carries the event's version as an external version:
//     the index refuses it (409) when it holds v or newer, so a redelivery
//     converges and a stale replay never wins;
//  3. the notification is claimed first (a row (m, v) with the claimer and
//     when): a claim that is ours, or one whose claimer's lease ran out,
//     is settled by asking the notifier what it sent for (m, v) before
//     sending; a fresh claim of another replica's means "in progress": nak;
//     after the send the claim is marked sent;
//  4. ack last. Any failure before the ack is a nak: the broker redelivers.
package svc

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite" // the service's own database

	"github.com/onceproof/tck/co"
)

// Defects are the deliberate mistakes of the mutants; the zero value is the
// reference.
type Defects struct {
	AckFirst         bool // ack as soon as the delivery arrives, then do the work
	NoClaim          bool // notify on every delivery: no claim record, no question to the notifier
	UnversionedIndex bool // write the index document unconditionally (no external version)
	DedupeByMessage  bool // the processed row and the claim are keyed by message id only, so an edit counts as done
}

type service struct {
	d      Defects
	nested bool
	worker string
	owner  string // this run's claim identity: worker and pid
	lease  time.Duration
	db     *sql.DB
	index  string
	notify string
	http   *http.Client
}

// Main runs the service until SIGTERM or SIGINT and exits non-zero on a
// configuration or start-up error.
//
// The flag -envelope nested makes it read the event shape that
// examples/profiles/consumer-envelope.yaml maps (a team's own shape, for
// the kit's envelope mapping): {"meta":{"id":M,"rev":V},"data":{"text":B}}
// with the event id in the Event-Id header.
func Main(d Defects) {
	envelope := flag.String("envelope", "", `the event shape to read: "" the kit's envelope, "nested" the shape of examples/profiles/consumer-envelope.yaml`)
	flag.Parse()
	if *envelope != "" && *envelope != "nested" {
		fmt.Fprintf(os.Stderr, "consumer service: -envelope %q: want nested or nothing\n", *envelope)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, d, *envelope == "nested"); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "consumer service:", err)
		os.Exit(1)
	}
}

func env(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is not set (see docs/consumer-service.md)", name)
	}
	return v, nil
}

// Run reads deliveries until ctx ends; nested: in the shape -envelope
// nested names (see Main). ONCEPROOF_BROKER=redis reads a Redis stream's
// consumer group (redis.go), kafka a partition and its group's committed
// offset (kafka.go), kafka-share a share group (kafka_share.go); anything
// else (or nothing) NATS JetStream.
func Run(ctx context.Context, d Defects, nested bool) error {
	var cfg [4]string
	for i, n := range []string{"ONCEPROOF_DATA_DIR", "ONCEPROOF_INDEX_URL", "ONCEPROOF_NOTIFY_URL", "ONCEPROOF_ACK_WAIT"} {
		v, err := env(n)
		if err != nil {
			return err
		}
		cfg[i] = v
	}
	dataDir, indexURL, notifyURL := cfg[0], cfg[1], cfg[2]
	ackWait, err := time.ParseDuration(cfg[3])
	if err != nil {
		return fmt.Errorf("ONCEPROOF_ACK_WAIT: %w", err)
	}
	worker := os.Getenv("ONCEPROOF_WORKER")
	db, err := openDB(filepath.Join(dataDir, "service.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	s := &service{d: d, nested: nested, worker: worker, owner: fmt.Sprintf("%s/%d", worker, os.Getpid()), lease: ackWait, db: db,
		index: indexURL, notify: notifyURL, http: &http.Client{Timeout: 5 * time.Second}}
	if os.Getenv("ONCEPROOF_BROKER") == "kafka-share" {
		return s.runKafkaShare(ctx)
	}
	if os.Getenv("ONCEPROOF_BROKER") == "kafka" {
		return s.runKafka(ctx)
	}
	if os.Getenv("ONCEPROOF_BROKER") == "redis" {
		return s.runRedis(ctx)
	}
	return s.runNATS(ctx)
}

// runNATS reads the durable pull consumer, one delivery at a time.
func (s *service) runNATS(ctx context.Context) error {
	var cfg [3]string
	for i, n := range []string{"ONCEPROOF_NATS_URL", "ONCEPROOF_STREAM", "ONCEPROOF_CONSUMER"} {
		v, err := env(n)
		if err != nil {
			return err
		}
		cfg[i] = v
	}
	natsURL, stream, durable := cfg[0], cfg[1], cfg[2]
	nc, err := nats.Connect(natsURL, nats.Name("consumer-service "+s.worker))
	if err != nil {
		return fmt.Errorf("connecting to the broker: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return fmt.Errorf("opening consumer %s on %s: %w", durable, stream, err)
	}
	fmt.Printf("%s: started (pid %d), reading %s/%s\n", s.worker, os.Getpid(), stream, durable)
	for ctx.Err() == nil {
		// One delivery at a time: a pull request of one.
		msg, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(os.Stderr, "%s: fetch: %v\n", s.worker, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.deliver(ctx, natsDelivery{msg})
	}
	return nil
}

// delivery is one message as either broker hands it over.
type delivery interface {
	Data() []byte
	Header(name string) string
	Attempt() string // the broker's delivery count, for the log ("?" where it gives none)
	Ack() error
	// Nak hands it back for a redelivery after delay (Redis has no nak:
	// it stays pending and is claimed again after the ack wait).
	Nak(delay time.Duration) error
	Term() error
}

type natsDelivery struct{ m jetstream.Msg }

func (d natsDelivery) Data() []byte              { return d.m.Data() }
func (d natsDelivery) Header(name string) string { return d.m.Headers().Get(name) }
func (d natsDelivery) Ack() error                { return d.m.Ack() }
func (d natsDelivery) Nak(delay time.Duration) error {
	return d.m.NakWithDelay(delay)
}
func (d natsDelivery) Term() error { return d.m.Term() }
func (d natsDelivery) Attempt() string {
	if meta, _ := d.m.Metadata(); meta != nil {
		return strconv.FormatUint(meta.NumDelivered, 10)
	}
	return "?"
}

func openDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS projection (message_id TEXT PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS processed (event_id TEXT PRIMARY KEY, at TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS notification (message_id TEXT NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,
			owner TEXT NOT NULL, claimed_ns INTEGER NOT NULL, PRIMARY KEY (message_id, version))`,
	} {
		if _, err := db.Exec(q); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("preparing %s: %w", path, err)
		}
	}
	return db, nil
}

// decode reads the event from the kit's envelope or, nested, from
// meta.id, meta.rev, data.text and the Event-Id header.
func (s *service) decode(msg delivery) (co.Event, error) {
	if !s.nested {
		return co.Decode(msg.Data())
	}
	var n struct {
		Meta struct {
			ID  string `json:"id"`
			Rev int    `json:"rev"`
		} `json:"meta"`
		Data struct {
			Text string `json:"text"`
		} `json:"data"`
	}
	if err := json.Unmarshal(msg.Data(), &n); err != nil {
		return co.Event{}, fmt.Errorf("not a nested event: %w", err)
	}
	e := co.Event{EventID: msg.Header("Event-Id"), MessageID: n.Meta.ID, Version: n.Meta.Rev, Body: n.Data.Text}
	if e.EventID == "" || e.MessageID == "" || e.Version <= 0 {
		return co.Event{}, fmt.Errorf("not a nested event (meta.id, meta.rev and the Event-Id header): %q", msg.Data())
	}
	return e, nil
}

func (s *service) deliver(ctx context.Context, msg delivery) {
	e, err := s.decode(msg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v; terminating it\n", s.worker, err)
		_ = msg.Term()
		return
	}
	attempt := msg.Attempt()
	fmt.Printf("%s: %s attempt %s\n", s.worker, e.EventID, attempt)
	if s.d.AckFirst {
		_ = msg.Ack()
		fmt.Printf("%s: %s acked (before its effects)\n", s.worker, e.EventID)
	}
	if err := s.handle(ctx, e); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %s: %v; nak\n", s.worker, e.EventID, err)
		if !s.d.AckFirst {
			delay := 200 * time.Millisecond
			var busy *busyError
			if errors.As(err, &busy) {
				// Another replica's claim: it is likely done in a moment; if
				// its claimer died, its lease runs out. Back off, at most
				// until then, so the redeliveries stay well under max deliver.
				n, _ := strconv.Atoi(attempt)
				delay = min(busy.wait, time.Duration(max(n, 1))*200*time.Millisecond)
			}
			_ = msg.Nak(delay)
		}
		return
	}
	if !s.d.AckFirst {
		if err := msg.Ack(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s: ack: %v\n", s.worker, e.EventID, err)
			return
		}
		fmt.Printf("%s: %s acked\n", s.worker, e.EventID)
	}
}

func (s *service) handle(ctx context.Context, e co.Event) error {
	if err := s.project(ctx, e); err != nil {
		return fmt.Errorf("projection: %w", err)
	}
	if err := s.indexDoc(ctx, e); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if err := s.notifyOnce(ctx, e); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// project commits the projection row and the processed-event row in one
// transaction.
func (s *service) project(ctx context.Context, e co.Event) error {
	key := e.EventID
	if s.d.DedupeByMessage {
		key = e.MessageID
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO processed (event_id, at) VALUES (?, ?)`, key, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return tx.Commit() // processed before: the projection already holds it
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO projection (message_id, version, body) VALUES (?, ?, ?)
		ON CONFLICT (message_id) DO UPDATE SET version = excluded.version, body = excluded.body WHERE excluded.version > projection.version`,
		e.MessageID, e.Version, e.Body); err != nil {
		return err
	}
	return tx.Commit()
}

// indexDoc writes the document at the event's version as an external
// version: 409 means the index holds this version or a newer one already.
func (s *service) indexDoc(ctx context.Context, e co.Event) error {
	u := s.index + "/docs/" + url.PathEscape(e.MessageID)
	if !s.d.UnversionedIndex {
		u += "?version=" + strconv.Itoa(e.Version) + "&version_type=external"
	}
	status, _, err := s.call(ctx, http.MethodPut, u, map[string]any{"version": e.Version, "body": e.Body})
	switch {
	case err != nil:
		return err
	case status == http.StatusOK || status == http.StatusCreated || status == http.StatusConflict:
		return nil
	}
	return fmt.Errorf("PUT %s: status %d", u, status)
}

// notifyOnce sends the notification of (m, v) unless it was sent: a claim
// row decides who sends, the notifier's count settles a claim whose sender
// may have died or lost the answer.
func (s *service) notifyOnce(ctx context.Context, e co.Event) error {
	if s.d.NoClaim {
		return s.send(ctx, e)
	}
	version := e.Version
	if s.d.DedupeByMessage {
		version = 0
	}
	now := time.Now().UnixNano()
	res, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO notification (message_id, version, state, owner, claimed_ns) VALUES (?, ?, 'claimed', ?, ?)`,
		e.MessageID, version, s.owner, now)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var state, owner string
		var claimed int64
		if err := s.db.QueryRowContext(ctx, `SELECT state, owner, claimed_ns FROM notification WHERE message_id = ? AND version = ?`,
			e.MessageID, version).Scan(&state, &owner, &claimed); err != nil {
			return err
		}
		if state == "sent" {
			return nil
		}
		if owner != s.owner {
			if left := s.lease - time.Duration(now-claimed); left > 0 {
				return &busyError{wait: left + 50*time.Millisecond, msg: fmt.Sprintf("the notification of %s is being sent by %s", e.EventID, owner)}
			}
			// The claimer's lease ran out: take the claim over, atomically.
			res, err := s.db.ExecContext(ctx, `UPDATE notification SET owner = ?, claimed_ns = ? WHERE message_id = ? AND version = ? AND owner = ? AND claimed_ns = ?`,
				s.owner, now, e.MessageID, version, owner, claimed)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("the claim of %s moved on", e.EventID)
			}
		}
		// An earlier attempt may have sent it: ask the notifier.
		sent, err := s.sentCount(ctx, e)
		if err != nil {
			return err
		}
		if sent > 0 {
			return s.markSent(ctx, e, version)
		}
	}
	if err := s.send(ctx, e); err != nil {
		return err
	}
	return s.markSent(ctx, e, version)
}

// busyError is a claim held by another live replica: come back after wait.
type busyError struct {
	wait time.Duration
	msg  string
}

func (e *busyError) Error() string { return e.msg }

func (s *service) markSent(ctx context.Context, e co.Event, version int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE notification SET state = 'sent' WHERE message_id = ? AND version = ?`, e.MessageID, version)
	return err
}

func (s *service) send(ctx context.Context, e co.Event) error {
	status, _, err := s.call(ctx, http.MethodPost, s.notify, co.Notification{MessageID: e.MessageID, Version: e.Version, Text: e.Body})
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("POST %s: status %d", s.notify, status)
	}
	return nil
}

func (s *service) sentCount(ctx context.Context, e co.Event) (int, error) {
	u := s.notify + "/count?messageId=" + url.QueryEscape(e.MessageID) + "&version=" + strconv.Itoa(e.Version)
	status, body, err := s.call(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", u, status)
	}
	var c struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return 0, err
	}
	return c.Count, nil
}

func (s *service) call(ctx context.Context, method, u string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
