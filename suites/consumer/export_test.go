package consumer

import "fmt"

// PublishedBy lists the broker message ids the kit publishes, in order,
// when it plays the CO-5.1 schedule of seed (for the seed test).
func PublishedBy(seed int64, events int) []string {
	var ids []string
	replays := 0
	for _, s := range schedule(seed, max(events, 200)) {
		switch s.kind {
		case stepNew:
			ids = append(ids, s.event.EventID)
		case stepReplay:
			replays++
			ids = append(ids, fmt.Sprintf("%s#replay-%d", s.event.EventID, replays))
		case stepTwin:
			ids = append(ids, s.event.EventID+"#a", s.event.EventID+"#b")
		}
	}
	return ids
}
