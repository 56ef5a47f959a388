package api

import (
	crand "crypto/rand"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net/textproto"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/onceproof/tck/internal/apidesc"
)

// The ids, tenants and payloads every rule sends are adversarial by
// default (docs/api.md, "One id or two"): an id is an opaque string
// compared byte for byte, so ids from a few to more than 256 characters,
// in mixed case, holding the separators stores join keys with, and (where
// the id travels in a body or a query, which carry any Unicode) both
// normalization forms of one letter and leading or trailing spaces, are
// what a rule's intents are made of. What HTTP itself cannot carry is left
// out: a header value is printable ASCII without surrounding whitespace
// (RFC 9110 §5.5; the Idempotency-Key draft makes the key an sf-string),
// and a path id holds no "/" (many routers decode %2F before routing).

// The classes of ids, each drawn with equal weight where the id's place
// can carry it.
const (
	idPlain     = "plain"      // tck-<rule>-<random>
	idShort     = "short"      // 10 random characters
	idLong      = "long"       // 256 to 320 characters
	idCase      = "mixed-case" // upper and lower case letters
	idSeparated = "separators" // _ : / | . - and an inner space
	idUnicode   = "unicode"    // a letter in NFC or NFD, non-Latin scripts (body, query)
	idSpaces    = "spaces"     // a leading and a trailing space (body, query)
)

const (
	alnum      = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	separators = "_:/|.-"
	// nfc and nfd are one letter in its two normalization forms: two ids.
	nfc = "\u00e9"
	nfd = "e\u0301"
)

// values mints a rule's intents from one seed and counts the classes it
// used, for the rule's evidence.
type values struct {
	d    *apidesc.Description
	salt string // unique to the run: a replayed seed meets no id of the first run
	mu   sync.Mutex
	rng  *rand.Rand

	ids, tenants, payloads map[string]int
	// issued holds every id and tenant drawn: a rule's two intents or
	// scopes must be two (the shortest tenant is the prefix alone, which
	// would repeat).
	issued map[string]bool
	// small leaves the strings of a KiB and more out (API-2.1, whose power
	// target counts trials, not bytes).
	small bool
}

// newValues draws from seed (mixed with the rule's id, so rules draw
// differently from one run seed).
func newValues(d *apidesc.Description, seed int64, rule string) *values {
	h := fnv.New64a()
	_, _ = h.Write([]byte(rule))
	s := uint64(seed) ^ h.Sum64()
	var salt [4]byte
	_, _ = crand.Read(salt[:])
	return &values{d: d, salt: fmt.Sprintf("%x", salt), rng: rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)),
		ids: map[string]int{}, tenants: map[string]int{}, payloads: map[string]int{}, issued: map[string]bool{}}
}

func (v *values) intn(n int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rng.IntN(n)
}

// random is n characters drawn from alphabet.
func (v *values) random(n int, alphabet string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[v.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// idClasses are the classes the id's place can carry.
func (v *values) idClasses() []string {
	cs := []string{idPlain, idShort, idLong, idCase, idSeparated}
	switch v.d.ID().In {
	case apidesc.InBody, apidesc.InQuery:
		cs = append(cs, idUnicode, idSpaces)
	}
	return cs
}

// seps are the separators the id's place can carry.
func (v *values) seps() string {
	if v.d.ID().In == apidesc.InPath {
		return "_:|.-"
	}
	return separators
}

// id is a fresh id of class c for rule; every class holds six characters
// drawn from the seed and the run's salt, so ids of different runs never
// meet, and v never gives one twice (the mixed-case class folds the
// random characters' case).
func (v *values) id(rule, c string) string {
	for {
		if s := v.drawID(rule, c); v.fresh(s, v.ids, c) {
			return s
		}
	}
}

// fresh records s as issued and counts it under class in tally, saying
// whether it was not issued before (a repeat is neither).
func (v *values) fresh(s string, tally map[string]int, class string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.issued[s] {
		return false
	}
	v.issued[s] = true
	tally[class]++
	return true
}

func (v *values) drawID(rule, c string) string {
	core := v.random(6, alnum) + v.salt
	prefix := "tck-" + strings.ToLower(strings.ReplaceAll(rule, ".", "-")) + "-"
	var s string
	switch c {
	case idShort:
		s = core
	case idLong:
		s = prefix + core + "-" + v.random(240+v.intn(65), alnum+v.seps())
		s = strings.Trim(s, " ")
	case idCase:
		s = "Tck-" + strings.ToUpper(core[:7]) + strings.ToLower(core[7:]) + "-MiXeD"
	case idSeparated:
		seps := v.seps()
		var b strings.Builder
		b.WriteString(prefix)
		for i, r := range core {
			b.WriteRune(r)
			if i < len(seps) {
				b.WriteByte(seps[i])
			}
		}
		if v.d.ID().In != apidesc.InPath {
			b.WriteString(" x")
		}
		s = b.String()
	case idUnicode:
		s = prefix + core + "-caf" + []string{nfc, nfd}[v.intn(2)] + "-Ω日本"
	case idSpaces:
		s = " " + prefix + core + " "
	default:
		s = prefix + core
	}
	return s
}

// anyID is a fresh id of a class drawn at random.
func (v *values) anyID(rule string) string {
	cs := v.idClasses()
	return v.id(rule, cs[v.intn(len(cs))])
}

// tenant is a fresh scope of varying length (9 to 48 characters: "t",
// the run's salt, then random ones), in mixed case, a third holding a
// separator; never one drawn before by v; "" when none is declared.
func (v *values) tenant() string {
	if v.d.Scope == nil {
		return ""
	}
	for {
		n := 9 + v.intn(40)
		s := "t" + v.salt + v.random(n-9, alnum)
		class := "length 9-48"
		if v.intn(3) == 0 {
			seps := v.seps()
			i := 1 + v.intn(len(s)-2)
			s = s[:i] + string(seps[v.intn(len(seps))]) + s[i+1:]
			class = "length 9-48 with a separator"
		}
		if v.fresh(s, v.tenants, class) {
			return s
		}
	}
}

// str is a payload string of a class drawn at random: short, a few KiB,
// 16 to 32 KiB, Unicode in both normalization forms, JSON escapes.
func (v *values) str() (string, string) {
	switch c := v.intn(8); {
	case c == 0 && !v.small:
		return "kb " + v.random(1024+v.intn(3072), alnum+" "), "1-4 KiB"
	case c == 1 && !v.small:
		return "big " + v.random(16<<10+v.intn(16<<10), alnum), "16-32 KiB"
	case c == 2:
		return "caf" + nfc + " caf" + nfd + " Ω 日本 🙂", "unicode (NFC and NFD)"
	case c == 3:
		return "q\"uote\\ back\tslash\nline \u2028 <&>", "JSON escapes"
	case c == 4:
		return " spaced ", "leading and trailing spaces"
	default:
		return "s-" + v.random(1+v.intn(12), alnum), "short"
	}
}

// intent is one business intent of a rule: its id, scope and payload.
type intent struct {
	id, scope string
	fields    map[string]any // the payload without the id field
	body      []byte
}

// newIntent mints a fresh intent: an id of a class drawn at random, a
// fresh scope when one is declared, and a payload whose vary field is
// unique to it and whose other fields are drawn from their classes.
func (v *values) newIntent(rule string) intent {
	return v.intentWith(v.anyID(rule))
}

// plainIntent is an intent with a plain id and the template's payload
// (the start-up probe's: it must not fail on what a rule judges).
func (v *values) plainIntent(rule string) intent {
	in := v.intentWith(v.id(rule, idPlain))
	maps.Copy(in.fields, v.d.Create.Body)
	in.fields[v.d.Create.Vary] = v.vary()
	in.body = v.d.Payload(in.id, in.fields)
	return in
}

func (v *values) intentWith(id string) intent {
	in := intent{id: id, scope: v.tenant(), fields: map[string]any{}}
	for k, tmpl := range v.d.Create.Body {
		if k == v.d.Create.Vary {
			continue
		}
		switch tmpl.(type) {
		case string:
			s, class := v.str()
			in.fields[k] = s
			v.mu.Lock()
			v.payloads["string: "+class]++
			v.mu.Unlock()
		case int, float64:
			in.fields[k] = 1 + v.intn(1<<30)
		default:
			in.fields[k] = tmpl
		}
	}
	in.fields[v.d.Create.Vary] = v.vary()
	in.body = v.d.Payload(in.id, in.fields)
	return in
}

// vary is a value of the vary field unique to one intent.
func (v *values) vary() any {
	if _, ok := v.d.Create.Body[v.d.Create.Vary].(string); ok {
		return "tck-" + v.random(10, alnum) + v.salt
	}
	return 1 + v.intn(1<<30)
}

// others are the intent's id and scope with another payload, one for each
// field of the payload changed in turn (a fingerprint over a subset of the
// fields lets one of them through).
func (in intent) others(d *apidesc.Description) []intent {
	keys := make([]string, 0, len(in.fields))
	for k := range in.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []intent
	for _, k := range keys {
		o := in
		o.fields = maps.Clone(in.fields)
		o.fields[k] = changed(in.fields[k])
		o.body = d.Payload(in.id, o.fields)
		out = append(out, o)
	}
	return out
}

// other is the intent with its vary field changed.
func (in intent) other(d *apidesc.Description) intent {
	o := in
	o.fields = maps.Clone(in.fields)
	o.fields[d.Create.Vary] = changed(in.fields[d.Create.Vary])
	o.body = d.Payload(in.id, o.fields)
	return o
}

// changed is another value of x's type.
func changed(x any) any {
	switch x := x.(type) {
	case string:
		return x + "-other"
	case int:
		return x + 1
	case float64:
		return x + 1
	case bool:
		return !x
	default:
		return "tck-other"
	}
}

// withID is the same payload under another id.
func (in intent) withID(d *apidesc.Description, id string) intent {
	o := in
	o.id = id
	o.body = d.Payload(id, in.fields)
	return o
}

// classes is the evidence's line of the value classes used.
func (v *values) classes() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	line := func(m map[string]int) string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		parts := make([]string, len(ks))
		for i, k := range ks {
			parts[i] = fmt.Sprintf("%s %d", k, m[k])
		}
		return strings.Join(parts, ", ")
	}
	s := "ids: " + line(v.ids)
	if len(v.tenants) > 0 {
		s += "; tenants: " + line(v.tenants)
	}
	if len(v.payloads) > 0 {
		s += "; payload fields: " + line(v.payloads)
	}
	return s
}

// casings are a header name in other casings, each a spelling of the same
// field (RFC 9110 §5.1: field names are case-insensitive): all lower, all
// upper, every letter's case swapped, the canonical form Go's Header.Set
// sends, and one mix drawn from the seed; name itself and repeats left out.
func (v *values) casings(name string) []string {
	// A field name is a token, ASCII: only its ASCII letters have a case.
	swap := func(c byte) byte {
		switch {
		case 'a' <= c && c <= 'z':
			return c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			return c - 'A' + 'a'
		}
		return c
	}
	b := []byte(name)
	for i := range b {
		b[i] = swap(b[i])
	}
	swapped := string(b)
	out := []string{}
	add := func(s string) bool {
		if s == name || slices.Contains(out, s) {
			return false
		}
		out = append(out, s)
		return true
	}
	for _, s := range []string{strings.ToLower(name), strings.ToUpper(name), swapped, textproto.CanonicalMIMEHeaderKey(name)} {
		add(s)
	}
	// A drawn mix: a parser that knows a few spellings misses it. A name
	// with few letters may have no spelling left.
	for range 16 {
		b := []byte(strings.ToLower(name))
		for i := range b {
			if v.intn(2) == 0 {
				b[i] = swap(b[i])
			}
		}
		if add(string(b)) {
			break
		}
	}
	return out
}
