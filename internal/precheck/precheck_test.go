package precheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/onceproof/tck/es"
)

func TestBloomHasNoFalseNegatives(t *testing.T) {
	b := NewBloom(1<<12, 4)
	agg := es.AggregateID{Context: "c", Name: "n", ID: "1", Tenant: "t"}
	for i := 0; i < 500; i++ {
		b.Remember(agg, fmt.Sprint("req-", i))
	}
	for i := 0; i < 500; i++ {
		if !b.MaybeDuplicate(agg, fmt.Sprint("req-", i)) {
			t.Fatalf("req-%d was remembered but the filter says no", i)
		}
	}
	other := agg
	other.ID = "2"
	fp := 0
	for i := 0; i < 1000; i++ {
		if b.MaybeDuplicate(other, fmt.Sprint("req-", i)) {
			fp++
		}
	}
	if fp > 100 { // ~2% expected at this load
		t.Errorf("false positive rate %d/1000 is far above the filter's design", fp)
	}
}

type authority map[string]bool

func (a authority) RequestIDExists(_ context.Context, _ es.AggregateID, id string) (bool, error) {
	return a[id], nil
}

func TestChainFailsClosed(t *testing.T) {
	agg := es.AggregateID{ID: "1", Name: "n"}
	b := NewBloom(64, 1)
	b.Remember(agg, "stored")
	if ok, _ := New(b, nil).Admit(context.Background(), agg, "stored"); ok {
		t.Error("a maybe without an authority was admitted")
	}
	if ok, _ := New(b, authority{"stored": true}).Admit(context.Background(), agg, "stored"); ok {
		t.Error("a confirmed duplicate was admitted")
	}
	if ok, _ := New(b, authority{}).Admit(context.Background(), agg, "stored"); !ok {
		t.Error("a refuted maybe (false positive) was rejected")
	}
}
