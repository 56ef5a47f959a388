package consumer

import "fmt"

// PublishedBy lists the broker message ids the kit publishes, in order,
// when it plays the CO-5.1 schedule of seed (for the seed test).
func PublishedBy(seed int64, events int) []string {
	var ids []string
	replays := 0
	steps, _ := schedule(seed, max(events, 200), "")
	for _, s := range steps {
		switch s.kind {
		case stepNew:
			ids = append(ids, s.event.EventID)
		case stepReplay:
			replays++
			ids = append(ids, fmt.Sprintf("%s#replay-%d", s.event.EventID, replays))
		case stepTwin:
			ids = append(ids, s.event.EventID+"#a", s.event.EventID+"#b")
		case stepPair:
			ids = append(ids, s.event.EventID, s.older.EventID)
			if s.dup {
				ids = append(ids, s.event.EventID+"#dup", s.older.EventID+"#dup")
			}
		}
	}
	return ids
}

// FigureConsumerErrors names the evidence figure that counts consumer errors.
const FigureConsumerErrors = figureConsumerErrors
