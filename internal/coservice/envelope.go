package coservice

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/mq"
)

// Envelope says where a service's events carry the kit's fields (the
// suite's consumer.Envelope, a profile's consumers[].envelope): each is a
// dotted JSON path of object keys into the payload ("meta.id") or
// "header:NAME". The zero Envelope is the kit's documented envelope
// ({"eventId","messageId","version","body"}, docs/consumer-service.md).
type Envelope = profile.Envelope

// isDefault says whether e is the kit's documented envelope.
func isDefault(e Envelope) bool { return e == Envelope{} }

// CheckEnvelope reports the first location that is malformed or that shares its
// place with another field.
func CheckEnvelope(e Envelope) error {
	if isDefault(e) {
		return nil
	}
	if field, err := profile.CheckEnvelope(&e); err != nil {
		return fmt.Errorf("envelope %s: %v", field, err)
	}
	return nil
}

// Describe names the envelope for the evidence and the report.
func Describe(e Envelope) string {
	if isDefault(e) {
		return `JSON {"eventId","messageId","version","body"}`
	}
	s := "mapped:"
	for _, f := range e.Fields() {
		s += fmt.Sprintf(" %s at %s", f[0], f[1])
	}
	return s
}

// Message is the broker message carrying ev in envelope e under the broker
// id brokerID: every event the kit publishes to a service goes through it.
func Message(e Envelope, ev co.Event, brokerID string) (mq.Message, error) {
	if isDefault(e) {
		return co.Message(ev, brokerID), nil
	}
	if err := CheckEnvelope(e); err != nil {
		return mq.Message{}, err
	}
	m := co.Message(ev, brokerID) // the broker id and the event id header
	root := map[string]any{}
	values := map[string]any{"messageId": ev.MessageID, "version": ev.Version, "eventId": ev.EventID, "body": ev.Body}
	for _, f := range e.Fields() {
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
