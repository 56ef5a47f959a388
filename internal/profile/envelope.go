package profile

import (
	"fmt"
	"strings"
)

// HeaderPrefix starts an envelope location that is a NATS message header.
const HeaderPrefix = "header:"

// Location is one parsed envelope location: a header name, or the object
// keys of a JSON path from the payload's root.
type Location struct {
	Header string
	Path   []string
}

func (l Location) String() string {
	if l.Header != "" {
		return HeaderPrefix + l.Header
	}
	return strings.Join(l.Path, ".")
}

// ParseLocation reads an envelope location: "header:NAME", or a JSON path
// of object keys joined by dots ("meta.id"). Keys and header names are
// letters, digits, '_' and '-': no escaping, no array indexes. The kit's
// own headers (Nats-Msg-Id, every Nats-*, onceproof-event-id) are refused:
// the kit sets them on every message (the broker id and the event id).
func ParseLocation(s string) (Location, error) {
	if s == "" {
		return Location{}, fmt.Errorf("an empty location: give a JSON path (meta.id) or header:NAME")
	}
	if name, ok := strings.CutPrefix(s, HeaderPrefix); ok {
		if err := checkName(name, "header name"); err != nil {
			return Location{}, fmt.Errorf("%q: %v", s, err)
		}
		if l := strings.ToLower(name); strings.HasPrefix(l, "nats-") || l == "onceproof-event-id" {
			return Location{}, fmt.Errorf("%q: the kit sets %s itself (the broker id, the event id); name a header of the service's own", s, name)
		}
		return Location{Header: name}, nil
	}
	path := strings.Split(s, ".")
	for i, k := range path {
		if k == "" {
			return Location{}, fmt.Errorf("%q: key %d of the path is empty (keys are joined by single dots)", s, i+1)
		}
		if err := checkName(k, "key"); err != nil {
			return Location{}, fmt.Errorf("%q: %v", s, err)
		}
	}
	return Location{Path: path}, nil
}

func checkName(s, what string) error {
	if s == "" {
		return fmt.Errorf("an empty %s", what)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%s %q has %q: only letters, digits, _ and - (no escaping)", what, s, r)
		}
	}
	return nil
}

// Fields are the envelope's mapped fields by their profile names, in order.
func (e *Envelope) Fields() [][2]string {
	var out [][2]string
	for _, f := range [][2]string{{"messageId", e.MessageID}, {"version", e.Version}, {"eventId", e.EventID}, {"body", e.Body}} {
		if f[1] != "" || f[0] == "messageId" || f[0] == "version" {
			out = append(out, f)
		}
	}
	return out
}

// CheckEnvelope checks every location and that no two fields land on one
// place: the same path or header (header names are case-insensitive), or a
// path inside another field's value ("meta" and "meta.id": meta cannot be
// both a value and an object). It returns the offending field's name.
func CheckEnvelope(e *Envelope) (field string, err error) {
	type placed struct {
		field string
		loc   Location
	}
	var seen []placed
	for _, f := range e.Fields() {
		loc, err := ParseLocation(f[1])
		if err != nil {
			return f[0], err
		}
		for _, p := range seen {
			if clash(p.loc, loc) {
				return f[0], fmt.Errorf("%q and %s's %q are one place in the event", f[1], p.field, p.loc)
			}
		}
		seen = append(seen, placed{f[0], loc})
	}
	return "", nil
}

// clash: a and b are one header, one path, or one path inside the other.
func clash(a, b Location) bool {
	if a.Header != "" || b.Header != "" {
		return strings.EqualFold(a.Header, b.Header)
	}
	n := min(len(a.Path), len(b.Path))
	for i := range n {
		if a.Path[i] != b.Path[i] {
			return false
		}
	}
	return true
}

// validateEnvelopes checks each consumer's envelope, at its field's line.
func (p *Profile) validateEnvelopes() error {
	for i, c := range p.Consumers {
		if c.Envelope == nil {
			continue
		}
		if field, err := CheckEnvelope(c.Envelope); err != nil {
			path := fmt.Sprintf("consumers[%d].envelope.%s", i, field)
			return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: err.Error()}
		}
	}
	return nil
}
