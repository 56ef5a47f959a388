package broker

import (
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/verdict"
)

// TestGroupPosition: each reading of a group's position against the log,
// Redis and Kafka, gives its verdict: a difference (fail) only on positive
// evidence, unknown where Redis keeps no counter for a group that has read,
// a hazard for a group created at its position, a note otherwise.
func TestGroupPosition(t *testing.T) {
	stream := map[string]string{"last-generated-id": "3-0", "entries-added": "3", "first-entry-id": "1-0"}
	for _, c := range []struct {
		name                          string
		group                         map[string]string
		diff, undecided, hazard, note string
	}{
		{"read everything", map[string]string{"last-delivered-id": "3-0", "entries-read": "3", "consumers": "w1", "pending": "0"}, "", "", "", ""},
		{"moved to the end keeping a counter", map[string]string{"last-delivered-id": "3-0", "entries-read": "1", "consumers": "w1", "pending": "0"},
			"the group read 1 of the 3 entries added: 2 entries were passed over", "", "", ""},
		{"moved, no counter", map[string]string{"last-delivered-id": "3-0", "entries-read": "null", "consumers": "w1", "pending": "1", "oldest-pending-id": "1-0", "oldest-pending-in-stream": "true"},
			"", "Redis keeps no read counter for it", "", ""},
		{"created at $, never read", map[string]string{"last-delivered-id": "3-0", "entries-read": "null", "consumers": "", "pending": "0"},
			"", "", "was created at 3-0 and has read nothing yet", ""},
		{"inside the stream", map[string]string{"last-delivered-id": "2-0", "entries-read": "2", "consumers": "w1", "pending": "0"}, "", "", "", "is inside the stream"},
		{"a trimmed pending entry", map[string]string{"last-delivered-id": "3-0", "entries-read": "3", "consumers": "w1", "pending": "1", "oldest-pending-id": "0-5", "oldest-pending-in-stream": "false"},
			"pending entry 0-5 is no longer in the stream (its first entry is 1-0)", "", "", ""},
		{"nothing delivered", map[string]string{"last-delivered-id": "0-0", "entries-read": "null", "consumers": "", "pending": "0"}, "", "", "", ""},
	} {
		t.Run("redis "+c.name, func(t *testing.T) {
			f := &fixture{ev: &verdict.Evidence{}}
			d := strings.Join(f.redisGroupPosition("orders", "workers", stream, c.group), "; ")
			check(t, "difference", d, c.diff)
			check(t, "undecided", strings.Join(f.undecided, "; "), c.undecided)
			check(t, "hazard", strings.Join(f.ev.Hazards, "; "), c.hazard)
			if c.note != "" {
				check(t, "note", strings.Join(f.ev.Notes, "; "), c.note)
			}
		})
	}
	for _, c := range []struct {
		name                  string
		s                     map[string]string
		diff, note, undecided string
	}{
		{"inside the log", map[string]string{"committed": "p0 3 of [0, 3)", "lag": "0"}, "", "Kafka keeps no record of what a group read", ""},
		{"inside the log by hand", map[string]string{"committed": "p0 3 of [0, 3)", "lag": "0", "committed-without-epoch": "p0 committed 3 (offsets 0..2 before it)"}, "", "", "group orders/billing: p0 committed 3 (offsets 0..2 before it) was committed without a leader epoch"},
		{"past the end", map[string]string{"committed": "p0 9 of [0, 3)", "committed-past-log-end": "p0 committed 9 > log end 3"}, "p0 committed 9 > log end 3: an offset no consumption", "", ""},
		{"below the start", map[string]string{"committed": "p0 0 of [2, 3)", "committed-before-log-start": "p0 committed 0 < log start 2"}, "deleted before the group consumed them", "", ""},
	} {
		t.Run("kafka "+c.name, func(t *testing.T) {
			f := &fixture{ev: &verdict.Evidence{}}
			check(t, "difference", strings.Join(f.kafkaGroupPosition("orders", "billing", c.s), "; "), c.diff)
			check(t, "undecided", strings.Join(f.undecided, "; "), c.undecided)
			if c.note != "" {
				check(t, "note", strings.Join(f.ev.Notes, "; "), c.note)
			}
		})
	}
}

// check wants got to contain want, or to be empty when want is.
func check(t *testing.T, what, got, want string) {
	t.Helper()
	if (want == "" && got != "") || !strings.Contains(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}
