// Package sqlrows is what the SQL event-store adapters share.
package sqlrows

import "github.com/onceproof/tck/es"

// Append folds one row of a SQL "one row per event, ordered by
// version then sequence" read into streams: a row of a new version starts a
// stream, a row of the same version adds its event to the last one. The SQL
// adapters share it so both rebuild streams the same way.
func Append(out []es.Stream, agg es.AggregateID, version int, requestID, commandID string, e es.Event) []es.Stream {
	if n := len(out); n == 0 || out[n-1].Version != version {
		out = append(out, es.Stream{Aggregate: agg, Version: version, RequestID: requestID, CommandID: commandID})
	}
	last := &out[len(out)-1]
	last.Events = append(last.Events, e)
	return out
}
