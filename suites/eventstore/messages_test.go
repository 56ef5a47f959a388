package eventstore

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/es"
)

// A race's reason lists every error its counts hide, each with its es
// type: ES-2.2 once said "1 other errors []" where the error hidden was a
// duplicate-request-id conflict.
func TestHiddenErrorsAreNamed(t *testing.T) {
	agg := es.AggregateID{Context: "c", Name: "n", ID: strings.Repeat("x", 300), Tenant: "t"}
	rd := &round{n: 3, at: []attempt{
		{err: nil},
		{err: &es.DuplicateAggregateIDError{Aggregate: agg, RequestID: "r1"}},
		{err: &es.DuplicateRequestIDError{Aggregate: agg, Version: 1, RequestID: "r2"}},
	}}
	v := oneWinner(rd, "DuplicateAggregateID", "concurrent creates")
	if !strings.Contains(v, "1 other errors: es.DuplicateRequestIDError") || !strings.Contains(v, "want 1 success and 2 es.DuplicateAggregateIDError") {
		t.Errorf("the hidden error is not named with its type: %s", v)
	}
	if strings.Contains(v, strings.Repeat("x", abbrevAt+1)) {
		t.Errorf("a 300-character id is not abbreviated: %s", v)
	}
}

// A long id is its first characters and a hash of the whole: two ids that
// differ past their start stay apart.
func TestAbbrev(t *testing.T) {
	a, b := strings.Repeat("a", 300)+"x", strings.Repeat("a", 300)+"y"
	if abbrev(a) == abbrev(b) || len([]rune(abbrev(a))) > 25 || !strings.HasPrefix(abbrev(a), "aaaaaaaaaaaa…#") {
		t.Errorf("abbrev: %q %q", abbrev(a), abbrev(b))
	}
	if abbrev("short-id") != "short-id" {
		t.Errorf("a short id changed: %q", abbrev("short-id"))
	}
}
