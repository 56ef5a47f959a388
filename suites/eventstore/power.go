package eventstore

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// A race rule's pass is a statistical statement: it ran n contended trials
// (trials in which at least two calls overlapped in time) and saw no
// violation. A defect that shows in a fraction p of contended trials escapes
// all n with probability (1-p)^n, so the smallest p it catches with 99%
// probability is 1 - 0.01^(1/n). A rule runs until n reaches the number its
// power target needs, or says unknown at its cap.

// confidence is the probability with which a pass rules out its power.
const confidence = 0.99

// contendedFor is the number of contended trials that catch a violation
// showing in a fraction p of them with 99% probability.
func contendedFor(p float64) int {
	if p <= 0 || p >= 1 {
		return 1
	}
	return int(math.Ceil(math.Log(1-confidence) / math.Log(1-p)))
}

// powerOf is the smallest violation rate per contended trial that n
// contended trials catch with 99% probability.
func powerOf(n int) float64 {
	if n <= 0 {
		return 1
	}
	return 1 - math.Pow(1-confidence, 1/float64(n))
}

// percent formats a rate with three significant figures.
func percent(p float64) string {
	return fmt.Sprintf("%.3g%%", 100*p)
}

// contended: at least two of the calls overlapped in time. In a tolerant
// round only calls that got a definite answer count: an append that failed
// because the store was down raced nothing.
func contended(at []attempt, tolerant bool) bool {
	type span struct{ start, end time.Duration }
	var ss []span
	for _, a := range at {
		if tolerant && a.indeterminate() {
			continue
		}
		ss = append(ss, span{a.start, a.end})
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
	var reach time.Duration
	for i, s := range ss {
		if i > 0 && s.start < reach {
			return true
		}
		reach = max(reach, s.end)
	}
	return false
}
