package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestUntilSucceeds(t *testing.T) {
	n := 0
	err := Until(context.Background(), time.Millisecond, 4*time.Millisecond, func() error {
		if n++; n < 5 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("err %v after %d calls, want nil after 5", err, n)
	}
}

func TestUntilGivesTheLastError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	n := 0
	err := Until(ctx, time.Millisecond, 2*time.Millisecond, func() error {
		n++
		return errors.New("still down")
	})
	if err == nil || err.Error() != "still down" || ctx.Err() == nil {
		t.Fatalf("err %v (ctx %v), want the last error once ctx ended", err, ctx.Err())
	}
	if n < 2 {
		t.Errorf("%d calls, want it to have retried", n)
	}
}

func TestUntilRunsOnceOnAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	if err := Until(ctx, time.Second, time.Second, func() error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("err %v after %d calls, want nil after 1", err, n)
	}
}
