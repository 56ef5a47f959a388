package consumer

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/mq"
)

// Envelope says where a service's events carry the kit's fields: each is a
// dotted JSON path of object keys into the payload ("meta.id") or
// "header:NAME" (a NATS header holding the text; a version in decimal).
// MessageID and Version are always given; an EventID or Body left "" is not
// in the event. The zero Envelope is the kit's documented envelope
// ({"eventId","messageId","version","body"}, docs/consumer-service.md).
// Whatever the envelope, Nats-Msg-Id is the kit's broker id and the
// onceproof-event-id header the event id. A profile's consumers[].envelope
// is one (docs/profile.md).
type Envelope struct {
	MessageID, Version, EventID, Body string
}

// IsDefault says whether e is the kit's documented envelope.
func (e Envelope) IsDefault() bool { return e == Envelope{} }

// Check reports the first location that is malformed or that shares its
// place with another field.
func (e Envelope) Check() error {
	if e.IsDefault() {
		return nil
	}
	pe := profile.Envelope(e)
	if field, err := profile.CheckEnvelope(&pe); err != nil {
		return fmt.Errorf("envelope %s: %v", field, err)
	}
	return nil
}

func (e Envelope) String() string {
	if e.IsDefault() {
		return `JSON {"eventId","messageId","version","body"}`
	}
	pe := profile.Envelope(e)
	s := "mapped:"
	for _, f := range pe.Fields() {
		s += fmt.Sprintf(" %s at %s", f[0], f[1])
	}
	return s
}

// Message is the broker message carrying ev in envelope e under the broker
// id brokerID: every event the kit publishes to a service goes through it.
func (e Envelope) Message(ev co.Event, brokerID string) (mq.Message, error) {
	if e.IsDefault() {
		return co.Message(ev, brokerID), nil
	}
	if err := e.Check(); err != nil {
		return mq.Message{}, err
	}
	m := co.Message(ev, brokerID) // the broker id and the event id header
	root := map[string]any{}
	values := map[string]any{"messageId": ev.MessageID, "version": ev.Version, "eventId": ev.EventID, "body": ev.Body}
	pe := profile.Envelope(e)
	for _, f := range pe.Fields() {
		loc, _ := profile.ParseLocation(f[1]) // checked above
		v := values[f[0]]
		if loc.Header != "" {
			s, _ := v.(string)
			if n, ok := v.(int); ok {
				s = strconv.Itoa(n)
			}
			m.Headers[loc.Header] = s
			continue
		}
		obj := root
		for _, k := range loc.Path[:len(loc.Path)-1] {
			next, ok := obj[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[k] = next
			}
			obj = next
		}
		obj[loc.Path[len(loc.Path)-1]] = v
	}
	b, err := json.Marshal(root)
	if err != nil {
		return mq.Message{}, err
	}
	m.Payload = b
	return m, nil
}
