// Package checker reads histories and decides what they show. It never
// drives the system under test.
package checker

import (
	"sort"

	"github.com/onceproof/tck/internal/history"
)

// Actions of a queue history. An enqueue's value is the message id; ok means
// the broker acknowledged the publish, fail that it certainly did not store
// it, info that nobody knows. A dequeue's value is the message id of a
// delivery the consumer acknowledged; ok means the broker confirmed the ack.
const (
	Enqueue = "enqueue"
	Dequeue = "dequeue"
)

// Queue is the total-queue verdict (Jepsen's total-queue checker): every
// acknowledged enqueue must be dequeued at least once, nothing may be
// dequeued that was not enqueued, and duplicates are counted.
type Queue struct {
	Attempted  int `json:"attempted"`  // enqueues invoked
	Acked      int `json:"acked"`      // enqueues ok
	Failed     int `json:"failed"`     // enqueues that certainly failed
	Info       int `json:"info"`       // enqueues of unknown outcome
	Dequeued   int `json:"dequeued"`   // dequeue ops ok (with repeats)
	Distinct   int `json:"distinct"`   // distinct values dequeued
	Duplicates int `json:"duplicates"` // dequeues beyond the first per value

	// Lost: acknowledged enqueue, never dequeued.
	Lost []string `json:"lost,omitempty"`
	// Unexpected: dequeued, but never enqueued (or enqueued and certainly
	// failed, which claimed it was not stored).
	Unexpected []string `json:"unexpected,omitempty"`
	// Duplicated: value -> times dequeued, for values dequeued more than once.
	Duplicated map[string]int `json:"duplicated,omitempty"`
	// Recovered: enqueue of unknown outcome that was dequeued after all.
	Recovered []string `json:"recovered,omitempty"`
}

// Valid is the verdict: nothing lost, nothing unexpected. Duplicates are
// allowed (at-least-once) and reported.
func (q Queue) Valid() bool { return len(q.Lost) == 0 && len(q.Unexpected) == 0 }

// TotalQueue checks a queue history. Operations still pending (no outcome)
// count as info.
func TotalQueue(ops []history.Op) Queue {
	outcome := map[string]history.Outcome{}
	dequeued := map[string]int{}
	var q Queue
	for _, op := range ops {
		switch op.Action {
		case Enqueue:
			q.Attempted++
			o := op.Outcome
			if o == "" {
				o = history.Info
			}
			// A value enqueued twice (a retry) takes its best outcome.
			if prev, seen := outcome[op.Value]; !seen || rank(o) > rank(prev) {
				outcome[op.Value] = o
			}
		case Dequeue:
			if op.Outcome == history.OK {
				dequeued[op.Value]++
				q.Dequeued++
			}
		}
	}
	for _, o := range outcome {
		switch o {
		case history.OK:
			q.Acked++
		case history.Fail:
			q.Failed++
		default:
			q.Info++
		}
	}
	for v, o := range outcome {
		if o == history.OK && dequeued[v] == 0 {
			q.Lost = append(q.Lost, v)
		}
		if o == history.Info && dequeued[v] > 0 {
			q.Recovered = append(q.Recovered, v)
		}
	}
	for v, n := range dequeued {
		q.Distinct++
		if o, ok := outcome[v]; !ok || o == history.Fail {
			q.Unexpected = append(q.Unexpected, v)
		}
		if n > 1 {
			if q.Duplicated == nil {
				q.Duplicated = map[string]int{}
			}
			q.Duplicated[v] = n
			q.Duplicates += n - 1
		}
	}
	sort.Strings(q.Lost)
	sort.Strings(q.Unexpected)
	sort.Strings(q.Recovered)
	return q
}

func rank(o history.Outcome) int {
	switch o {
	case history.OK:
		return 2
	case history.Info:
		return 1
	}
	return 0
}
