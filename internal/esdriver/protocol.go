// Package esdriver is the kit's side of the event-store driver protocol
// (docs/eventstore-driver.md): JSON lines over the stdin and stdout of an
// adapter process the team writes in its own language. Driver starts the
// adapter (several processes over one database when it says they share
// their data), restarts one that died, reaps them all at Stop, and hands
// out handles that implement es.EventStore, so every ES rule runs through
// it unchanged.
//
// An answer the protocol defines (ok, the three typed conflicts, closed,
// invalid argument, other error) becomes the matching es error. Anything
// else (a line that is not a reply, a reply to no request, an adapter that
// exits or stops reading) is a protocol problem: the call fails with a
// *ProtocolError (indeterminate, never a conflict) and the Driver records
// it with the adapter's last output, so the rule running then can be
// judged unknown rather than fail.
package esdriver

import (
	"encoding/json"

	"github.com/onceproof/tck/es"
)

// Version is the protocol version the kit speaks (the "protocol" field of
// hello).
const Version = 1

// The operations.
const (
	opHello  = "hello"
	opOpen   = "open"
	opAppend = "append"
	opLoad   = "load"
	opExists = "exists"
	opClose  = "close"
)

// The statuses of a reply: ok, the three typed conflicts, and the three
// other definite answers.
const (
	StatusOK                   = "ok"
	StatusDuplicateRequestID   = "duplicate-request-id"
	StatusVersionConflict      = "version-conflict"
	StatusDuplicateAggregateID = "duplicate-aggregate-id"
	StatusClosed               = "closed"
	StatusInvalidArgument      = "invalid-argument"
	StatusError                = "error"
)

// request is one line from the kit to the adapter.
type request struct {
	ID        uint64          `json:"id"`
	Op        string          `json:"op"`
	Protocol  int             `json:"protocol,omitempty"`  // hello
	Handle    string          `json:"handle,omitempty"`    // append, load, exists, close
	Stream    *wireStream     `json:"stream,omitempty"`    // append
	Aggregate *es.AggregateID `json:"aggregate,omitempty"` // load, exists
	From      *int            `json:"from,omitempty"`      // load
	To        *int            `json:"to,omitempty"`        // load
	RequestID *string         `json:"requestId,omitempty"` // exists
}

// reply is one line from the adapter to the kit. Fields a status does not
// use are absent.
type reply struct {
	ID      *uint64 `json:"id"`
	Status  string  `json:"status"`
	Message string  `json:"message,omitempty"`

	// hello
	Protocol     int             `json:"protocol,omitempty"`
	Store        string          `json:"store,omitempty"`
	SharedData   bool            `json:"sharedData,omitempty"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	// open
	Handle string `json:"handle,omitempty"`
	// load
	Streams []wireStream `json:"streams,omitempty"`
	// exists
	Exists *bool `json:"exists,omitempty"`
	// the typed conflicts
	Aggregate *es.AggregateID `json:"aggregate,omitempty"`
	Version   *int            `json:"version,omitempty"`
	RequestID *string         `json:"requestId,omitempty"`
}

// wireStream is es.Stream on the wire: bodies in standard base64, event
// types under "type".
type wireStream struct {
	Aggregate *es.AggregateID `json:"aggregate"`
	Version   int             `json:"version"`
	RequestID string          `json:"requestId"`
	CommandID string          `json:"commandId"`
	Events    []wireEvent     `json:"events"`
}

type wireEvent struct {
	Type string `json:"type"`
	Body []byte `json:"body"` // encoding/json writes and reads []byte as standard base64
}

// Capabilities is what hello may declare.
type Capabilities struct {
	// AcceptsVersionGap: an append at tail+2 is stored (rule ES-1.11).
	AcceptsVersionGap bool `json:"acceptsVersionGap"`
}

func toWire(s es.Stream) *wireStream {
	agg := s.Aggregate
	w := &wireStream{Aggregate: &agg, Version: s.Version, RequestID: s.RequestID, CommandID: s.CommandID, Events: []wireEvent{}}
	for _, e := range s.Events {
		body := e.Body
		if body == nil {
			body = []byte{} // "" rather than null: an empty body is zero bytes
		}
		w.Events = append(w.Events, wireEvent{Type: e.Name, Body: body})
	}
	return w
}

func fromWire(w wireStream) es.Stream {
	s := es.Stream{Version: w.Version, RequestID: w.RequestID, CommandID: w.CommandID}
	if w.Aggregate != nil {
		s.Aggregate = *w.Aggregate
	}
	for _, e := range w.Events {
		s.Events = append(s.Events, es.Event{Name: e.Type, Body: e.Body})
	}
	return s
}
