package gen

import "time"

// Shrink returns a smaller part of items that still fails, by delta
// debugging (Zeller's ddmin): it removes ever smaller chunks and keeps a
// removal whenever fails, which replays a candidate, still says true. Order
// is kept. It stops at a 1-minimal result, after budget, or after
// maxReplays replays, and returns the smallest failing part found (items
// itself if none smaller failed). fails must be true for items.
func Shrink[T any](items []T, fails func([]T) bool, budget time.Duration, maxReplays int) (smallest []T, replays int) {
	deadline := time.Now().Add(budget)
	cur := items
	n := 2
	for len(cur) >= 2 {
		chunk := (len(cur) + n - 1) / n
		reduced := false
		for start := 0; start < len(cur); start += chunk {
			if replays >= maxReplays || time.Now().After(deadline) {
				return cur, replays
			}
			cand := append(append([]T(nil), cur[:start]...), cur[min(len(cur), start+chunk):]...)
			if len(cand) == 0 {
				continue
			}
			replays++
			if fails(cand) {
				cur = cand
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(len(cur), 2*n)
		}
	}
	return cur, replays
}
