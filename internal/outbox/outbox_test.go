package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/mq"
)

// recorder is a Publisher that keeps what was published; the broker itself
// is exercised by the consumer suite, this test checks the database side.
type recorder struct {
	ids  []string
	fail error
}

func (r *recorder) Publish(ctx context.Context, topic string, m mq.Message) (mq.PublishAck, error) {
	if r.fail != nil {
		return mq.PublishAck{}, r.fail
	}
	r.ids = append(r.ids, m.ID)
	return mq.PublishAck{Position: "1"}, nil
}

func TestCommitRelayRollback(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outbox.db")
	pub := &recorder{}
	o, err := New(path, pub, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	a, b := co.NewEvent("m-1", 1), co.NewEvent("m-2", 1)
	if err := o.Submit(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := o.Submit(ctx, b, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("rollback: %v", err)
	}
	// A failed publish leaves the row pending.
	pub.fail = errors.New("broker down")
	if n, err := o.RelayOnce(ctx); n != 0 || err == nil {
		t.Fatalf("relay with a failing broker: %d %v", n, err)
	}
	pub.fail = nil
	if n, err := o.RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("relay: %d %v", n, err)
	}
	if n, _ := o.RelayOnce(ctx); n != 0 {
		t.Fatalf("a sent row was relayed again")
	}
	if len(pub.ids) != 1 || pub.ids[0] != a.EventID {
		t.Fatalf("published %v, want only %s (nothing for the rolled-back one)", pub.ids, a.EventID)
	}
	var n int
	_ = o.DB.QueryRow(`SELECT count(*) FROM messages`).Scan(&n)
	if n != 1 {
		t.Fatalf("business rows = %d, want 1", n)
	}
}
