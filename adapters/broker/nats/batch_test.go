package nats_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
)

func batchOf(id string, n int) mq.Batch {
	b := mq.Batch{ID: id}
	for i := 1; i <= n; i++ {
		b.Messages = append(b.Messages, mq.Message{ID: fmt.Sprintf("%s-%d", id, i), Payload: []byte(fmt.Sprint(i))})
	}
	return b
}

// TestBatchPlumbing checks the adapter's batch path (the rules live in the
// suite): a committed batch at consecutive sequences, a duplicate id that
// refuses the whole batch, a commit sent without awaiting its reply and
// its retry, bad input.
func TestBatchPlumbing(t *testing.T) {
	ctx := context.Background()
	_, b := embeddedTopic(t, "batch")
	if !b.Capabilities().AtomicBatch {
		t.Fatal("the embedded server (2.12 or later) does not declare atomic batches")
	}
	bp := b.(mq.BatchPublisher)
	if l := bp.BatchLimits(); l.MaxMessages != nats.DefaultBatchMax || l.Abandon != nats.DefaultBatchAbandon {
		t.Errorf("limits %+v, want the server's defaults", l)
	}
	ack, err := bp.PublishBatch(ctx, "batch", batchOf("b1", 3))
	if err != nil || fmt.Sprint(ack.Positions) != "[1 2 3]" {
		t.Fatalf("committed batch: %+v %v", ack, err)
	}
	dup := batchOf("b2", 2)
	dup.Messages[1].ID = "b1-2"
	if _, err := bp.PublishBatch(ctx, "batch", dup); !errors.Is(err, mq.ErrBatchRefused) {
		t.Errorf("a batch repeating a stored id: %v, want a refusal", err)
	}
	lost := batchOf("b3", 2)
	lost.NoCommitReply = true
	if _, err := bp.PublishBatch(ctx, "batch", lost); !errors.Is(err, mq.ErrCommitUnconfirmed) {
		t.Errorf("a commit not awaited: %v, want ErrCommitUnconfirmed", err)
	}
	lost.NoCommitReply = false
	if _, err := bp.PublishBatch(ctx, "batch", lost); !errors.Is(err, mq.ErrBatchRefused) {
		t.Errorf("the retry of a stored batch: %v, want a refusal", err)
	}
	all, err := b.ReadAll(ctx, "batch")
	if err != nil || len(all) != 5 {
		t.Fatalf("read back %d messages (%v), want 5: b1 and b3", len(all), err)
	}
	if all[0].Message.ID != "b1-1" || all[4].Message.ID != "b3-2" {
		t.Errorf("stored %s .. %s", all[0].Message.ID, all[4].Message.ID)
	}
	for _, bad := range []mq.Batch{{ID: "empty"}, {ID: "", Messages: []mq.Message{{ID: "x"}}}} {
		if _, err := bp.PublishBatch(ctx, "batch", bad); err == nil || errors.Is(err, mq.ErrBatchRefused) {
			t.Errorf("batch %+v: %v, want the adapter's own error", bad, err)
		}
	}
}
