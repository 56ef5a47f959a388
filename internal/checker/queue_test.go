package checker

import (
	"reflect"
	"testing"

	"github.com/onceproof/tck/internal/history"
)

func TestTotalQueue(t *testing.T) {
	r := history.New()
	r.Invoke("p", Enqueue, "a").OK("")
	r.Invoke("p", Enqueue, "b").OK("")   // lost
	r.Invoke("p", Enqueue, "c").Info("") // recovered
	r.Invoke("p", Enqueue, "d").Fail("") // delivered anyway: unexpected
	r.Invoke("p", Enqueue, "e").Info("") // unknown, not delivered: fine
	r.Invoke("c", Dequeue, "a").OK("")
	r.Invoke("c", Dequeue, "a").OK("") // duplicate
	r.Invoke("c", Dequeue, "c").OK("")
	r.Invoke("c", Dequeue, "d").OK("")
	r.Invoke("c", Dequeue, "z").OK("")   // never enqueued
	r.Invoke("c", Dequeue, "b").Info("") // ack unconfirmed: not a dequeue
	q := TotalQueue(r.Ops())
	if q.Valid() {
		t.Fatal("history with a lost and unexpected values judged valid")
	}
	if !reflect.DeepEqual(q.Lost, []string{"b"}) || !reflect.DeepEqual(q.Unexpected, []string{"d", "z"}) ||
		!reflect.DeepEqual(q.Recovered, []string{"c"}) || q.Duplicates != 1 || q.Duplicated["a"] != 2 {
		t.Fatalf("%+v", q)
	}
	if q.Attempted != 5 || q.Acked != 2 || q.Info != 2 || q.Failed != 1 || q.Distinct != 4 {
		t.Fatalf("counts %+v", q)
	}
}

func TestTotalQueueValid(t *testing.T) {
	r := history.New()
	r.Invoke("p", Enqueue, "a").Info("timeout")
	r.Invoke("p", Enqueue, "a").OK("") // the retry settles it
	r.Invoke("c", Dequeue, "a").OK("")
	if q := TotalQueue(r.Ops()); !q.Valid() || q.Acked != 1 {
		t.Fatalf("%+v", q)
	}
}
