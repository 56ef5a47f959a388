package api

import (
	"strings"

	"github.com/onceproof/tck/internal/apidesc"
)

// slot is one key of a generated schedule: an intent, its other payloads,
// and how it is confusable with an earlier slot ("" when it is not).
type slot struct {
	in     intent
	others []intent
	twin   string
	of     int // the slot it is a twin of
}

func (s slot) key() string { return s.in.scope + "\x00" + s.in.id }

// payload is the slot's payload p (0: its own, k: its k-th other).
func (s slot) payload(p int) intent {
	if p == 0 {
		return s.in
	}
	return s.others[p-1]
}

// shows is which of the slot's payloads a read body shows (-1: none).
func (s slot) shows(body []byte) int {
	if shows(body, s.in.body) == "" {
		return 0
	}
	for i, o := range s.others {
		if shows(body, o.body) == "" {
			return i + 1
		}
	}
	return -1
}

func newSlot(d *apidesc.Description, in intent) slot {
	return slot{in: in, others: in.others(d), of: -1}
}

// The kinds of twins: two ids (or scope and id pairs) a careless service
// takes for one, which the contract says are two.
const (
	twinCase   = "case twin (every letter's case swapped)"
	twinTail   = "tail twin (the first 32 or more bytes shared)"
	twinSplit  = "tenant/id split twin (tenant+id equal without a separator)"
	twinNFD    = "NFC/NFD twin (one letter in the other normalization form)"
	twinSpaced = "trailing-space twin"
)

// twinKinds are the twins the description's places can carry.
func (v *values) twinKinds() []string {
	ks := []string{twinCase, twinTail}
	if v.d.Scope != nil {
		ks = append(ks, twinSplit)
	}
	switch v.d.ID().In {
	case apidesc.InBody, apidesc.InQuery:
		ks = append(ks, twinNFD, twinSpaced)
	}
	return ks
}

// twinOf is an intent confusable with base in the way kind says, with a
// payload of its own; ok is false when base cannot have that twin.
func (v *values) twinOf(base intent, kind string) (intent, bool) {
	id, scope := base.id, base.scope
	switch kind {
	case twinCase:
		id = swapCase(id)
	case twinTail:
		if len(id) < 33 {
			return intent{}, false
		}
		flip := "x"
		if id[len(id)-1] == 'x' {
			flip = "y"
		}
		id = id[:len(id)-1] + flip
	case twinSplit:
		j := 1 + v.intn(3)
		if len(id) <= j+1 || strings.ContainsAny(id[:j+1], " ") {
			return intent{}, false
		}
		scope, id = scope+id[:j], id[j:]
	case twinNFD:
		switch {
		case strings.Contains(id, nfc):
			id = strings.Replace(id, nfc, nfd, 1)
		case strings.Contains(id, nfd):
			id = strings.Replace(id, nfd, nfc, 1)
		default:
			return intent{}, false
		}
	case twinSpaced:
		id += " "
	}
	if id == base.id && scope == base.scope {
		return intent{}, false
	}
	t := v.intentWith(id)
	t.scope = scope
	t.body = v.d.Payload(id, t.fields)
	return t, true
}

// twinPair is a fresh base intent and its twin of kind (the base long
// enough for a tail twin, holding a letter in NFC for an NFD twin).
func (v *values) twinPair(rule, kind string) (base, twin intent, ok bool) {
	class := idPlain
	switch kind {
	case twinTail:
		class = idLong
	case twinNFD:
		class = idUnicode
	}
	base = v.intentWith(v.id(rule, class))
	if kind == twinNFD && !strings.Contains(base.id, nfc) && !strings.Contains(base.id, nfd) {
		base = v.intentWith(base.id + "-" + nfc)
	}
	twin, ok = v.twinOf(base, kind)
	return base, twin, ok
}

func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}
