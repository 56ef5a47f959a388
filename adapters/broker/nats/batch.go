package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceproof/tck/mq"
)

// Atomic batch publish (NATS 2.12, ADR-50 "JetStream Batch Publishing";
// nats-server server/stream.go processJetStreamAtomicBatchMsg). nats.go
// v1.55 has the stream setting (StreamConfig.AllowAtomicPublish) but no
// batch helper, so the adapter speaks the headers itself: every member
// carries Nats-Batch-Id and Nats-Batch-Sequence (1..n), the last one also
// Nats-Batch-Commit: 1. The server stages the members and stores them all
// at the commit, or none; it abandons a batch idle for max_batch_timeout
// (default 10 s) and refuses one over max_batch_size (default 1000).

// The batch headers, as nats-server spells them (server/stream.go).
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// The server's defaults for atomic batches (server/stream.go:
// streamDefaultMaxAtomicBatchSize, streamDefaultMaxBatchTimeout).
const (
	DefaultBatchMax     = 1000
	DefaultBatchAbandon = 10 * time.Second
)

// batchFlowEvery: a member past the first is sent without waiting for the
// server's (empty) reply, except every batchFlowEvery-th, so a large batch
// does not outrun the server and a refusal midway is seen early.
const batchFlowEvery = 100

// batchTimeout bounds PublishBatch when the caller's context has no
// deadline: well past what a batch of the server's size limit takes.
const batchTimeout = 30 * time.Second

var _ mq.BatchPublisher = (*Broker)(nil)

// atomicSince is the first server version with atomic batch publish.
var atomicSince = [3]int{2, 12, 0}

// atomicBatches says whether the connected server has atomic batch
// publish (2.12 or later), and if not why.
func (b *Broker) atomicBatches() (bool, string) {
	v := b.nc.ConnectedServerVersion()
	got, ok := parseVersion(v)
	if !ok {
		return false, fmt.Sprintf("the server's version %q could not be read", v)
	}
	for i := range got {
		if got[i] != atomicSince[i] {
			if got[i] > atomicSince[i] {
				return true, ""
			}
			return false, fmt.Sprintf("nats-server %s predates atomic batch publish (2.12)", v)
		}
	}
	return true, ""
}

// parseVersion reads "2.12.1" (or "v2.12.1-beta") into its numbers.
func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(v, "v")
	if k := strings.IndexAny(v, "-+"); k >= 0 {
		v = v[:k]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// BatchLimits are the server's batch limits as the options declare them
// (the server's defaults unless told otherwise: nats-server reports them
// only in its configuration and in a refusal).
func (b *Broker) BatchLimits() mq.BatchLimits {
	l := b.opts.BatchLimits
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultBatchMax
	}
	if l.Abandon <= 0 {
		l.Abandon = DefaultBatchAbandon
	}
	return l
}

// pubReply is the server's reply to a batch member: empty for a staged
// member, a PubAck with the batch's last sequence and size for the commit,
// or an API error for a refusal (the server then drops the batch).
type pubReply struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Batch  string `json:"batch"`
	Count  uint64 `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// PublishBatch publishes bt on topic as one atomic batch.
func (b *Broker) PublishBatch(ctx context.Context, topic string, bt mq.Batch) (mq.BatchAck, error) {
	n := len(bt.Messages)
	if n == 0 {
		return mq.BatchAck{}, errors.New("nats: an empty batch")
	}
	if bt.ID == "" || len(bt.ID) > 64 {
		return mq.BatchAck{}, fmt.Errorf("nats: a batch id must have 1 to 64 characters, not %d", len(bt.ID))
	}
	// nats.go's flush needs a deadline; a caller's context may have none.
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, batchTimeout)
		defer cancel()
	}
	nc := b.nc
	if bt.Abandon > 0 {
		// A publisher that dies mid-batch: its own connection, closed
		// after the members it sent.
		own, err := dial(b.url, b.opts)
		if err != nil {
			return mq.BatchAck{}, err
		}
		defer own.Close()
		nc = own
		n = min(n, bt.Abandon)
	}
	subj := Subject(topic)
	for i := range n {
		seq := i + 1
		msg := natsgo.NewMsg(subj)
		msg.Data = bt.Messages[i].Payload
		for k, v := range bt.Messages[i].Headers {
			msg.Header.Set(k, v)
		}
		if id := bt.Messages[i].ID; id != "" {
			msg.Header.Set(jetstream.MsgIDHeader, id)
		}
		msg.Header.Set(batchIDHeader, bt.ID)
		msg.Header.Set(batchSeqHeader, strconv.Itoa(seq))
		commit := seq == len(bt.Messages) && bt.Abandon <= 0
		if commit {
			msg.Header.Set(batchCommitHeader, "1")
			if bt.NoCommitReply {
				if err := nc.PublishMsg(msg); err != nil {
					return mq.BatchAck{}, err
				}
				if err := nc.FlushWithContext(ctx); err != nil {
					return mq.BatchAck{}, err
				}
				return mq.BatchAck{}, mq.ErrCommitUnconfirmed
			}
		}
		if !commit && seq != 1 && seq%batchFlowEvery != 0 {
			if err := nc.PublishMsg(msg); err != nil {
				return mq.BatchAck{}, err
			}
			continue
		}
		resp, err := nc.RequestMsgWithContext(ctx, msg)
		if err != nil {
			return mq.BatchAck{}, fmt.Errorf("batch %s member %d: %w", bt.ID, seq, err)
		}
		r, err := readReply(resp.Data)
		if err != nil {
			return mq.BatchAck{}, fmt.Errorf("batch %s member %d: %w", bt.ID, seq, err)
		}
		if !commit {
			continue
		}
		if r.Count != uint64(len(bt.Messages)) || r.Seq < r.Count {
			return mq.BatchAck{}, fmt.Errorf("batch %s: the commit's reply says %d members up to sequence %d, the batch has %d", bt.ID, r.Count, r.Seq, len(bt.Messages))
		}
		ack := mq.BatchAck{Positions: make([]string, len(bt.Messages))}
		for j := range ack.Positions {
			ack.Positions[j] = strconv.FormatUint(r.Seq-r.Count+1+uint64(j), 10)
		}
		return ack, nil
	}
	// An abandoned batch: the members were sent, the commit never is.
	return mq.BatchAck{}, nc.FlushWithContext(ctx)
}

// errIncompleteBatch is the server's JSAtomicPublishIncompleteBatchErr: a
// batch it dropped for a missing member or an idle timeout (errors.json).
const errIncompleteBatch = 10176

// readReply decodes a member's reply: empty is a staged member, an API
// error a refusal of the whole batch.
func readReply(data []byte) (pubReply, error) {
	var r pubReply
	if len(data) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("an unreadable reply %q: %w", data, err)
	}
	if r.Error != nil {
		if r.Error.ErrCode == errIncompleteBatch {
			return r, fmt.Errorf("%w: %s (err_code %d)", mq.ErrBatchAbandoned, r.Error.Description, r.Error.ErrCode)
		}
		return r, fmt.Errorf("%w: %s (err_code %d)", mq.ErrBatchRefused, r.Error.Description, r.Error.ErrCode)
	}
	return r, nil
}
