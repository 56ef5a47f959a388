package gen

import (
	"strings"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// Text is a generated string and the class it was drawn from, so that a rule
// can say which classes its run covered.
type Text struct {
	Class string
	S     string
}

// Bytes is a generated body and its class.
type Bytes struct {
	Class string
	B     []byte
}

// Separators are the characters stores join key parts with.
const Separators = "_:/|.-"

// The classes of Text values.
const (
	ClassShort     = "short"
	ClassLong      = "long (>=256 chars)"
	ClassCase      = "mixed case"
	ClassNFC       = "unicode NFC"
	ClassNFD       = "unicode NFD"
	ClassSpaces    = "leading/trailing spaces"
	ClassSeparator = "separators " + Separators
	ClassNUL       = "NUL inside"
)

// nfcE and nfdE are "é" in the two normalization forms: one string to a
// reader, two to a store that compares bytes, which it must.
const (
	nfcE = "\u00e9"
	nfdE = "e\u0301"
)

// IDOptions shape ID.
type IDOptions struct {
	// NUL allows a NUL byte inside (only where the contract allows it).
	NUL bool
	// Long is the length of the long class (default 300 characters).
	Long int
}

// ID generates identity parts (ids, request ids, tenants, names) from every
// adversarial class: short, long (beyond the 64 and 255 columns stores cut
// to), mixed case, Unicode in both normalization forms, leading and trailing
// spaces, the separators stores join keys with, and NUL when allowed. Every
// value is non-empty valid UTF-8.
func ID(o IDOptions) *rapid.Generator[Text] {
	long := o.Long
	if long <= 0 {
		long = 300
	}
	word := rapid.StringMatching(`[a-z0-9]{1,12}`)
	classes := []*rapid.Generator[Text]{
		rapid.Custom(func(t *rapid.T) Text { return Text{ClassShort, word.Draw(t, "w")} }),
		rapid.Custom(func(t *rapid.T) Text {
			n := rapid.IntRange(256, long).Draw(t, "n")
			w := word.Draw(t, "w")
			return Text{ClassLong, strings.Repeat(w, n/len(w)+1)[:n]}
		}),
		rapid.Custom(func(t *rapid.T) Text {
			w := rapid.StringMatching(`[a-zA-Z]{2,12}`).Draw(t, "w")
			if strings.ToLower(w) == w {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			return Text{ClassCase, w}
		}),
		rapid.Custom(func(t *rapid.T) Text { return Text{ClassNFC, "caf" + nfcE + "-" + word.Draw(t, "w")} }),
		rapid.Custom(func(t *rapid.T) Text { return Text{ClassNFD, "caf" + nfdE + "-" + word.Draw(t, "w")} }),
		rapid.Custom(func(t *rapid.T) Text {
			return Text{ClassSpaces, strings.Repeat(" ", rapid.IntRange(0, 2).Draw(t, "l")) + word.Draw(t, "w") + strings.Repeat(" ", rapid.IntRange(1, 2).Draw(t, "r"))}
		}),
		rapid.Custom(func(t *rapid.T) Text {
			sep := string(Separators[rapid.IntRange(0, len(Separators)-1).Draw(t, "sep")])
			return Text{ClassSeparator, word.Draw(t, "a") + sep + word.Draw(t, "b")}
		}),
	}
	if o.NUL {
		classes = append(classes, rapid.Custom(func(t *rapid.T) Text { return Text{ClassNUL, word.Draw(t, "a") + "\x00" + word.Draw(t, "b")} }))
	}
	return rapid.OneOf(classes...)
}

// Twin is a value confusable with s that a store must keep distinct: a case
// variant, the other normalization form, a trailing space, a differing tail
// past a column width. kind names which.
func Twin(s string) (twin, kind string) {
	switch {
	case strings.Contains(s, nfcE):
		return strings.Replace(s, nfcE, nfdE, 1), "NFC/NFD twin"
	case strings.Contains(s, nfdE):
		return strings.Replace(s, nfdE, nfcE, 1), "NFD/NFC twin"
	case utf8.RuneCountInString(s) >= 256:
		return s[:len(s)-1] + flip(s[len(s)-1]), "differs past 255 characters"
	case strings.ToUpper(s) != s:
		return strings.ToUpper(s), "case twin"
	case strings.ToLower(s) != s:
		return strings.ToLower(s), "case twin"
	}
	return s + " ", "trailing-space twin"
}

// Twins is every twin of s (Twin gives the first only): the other
// normalization form, a differing tail, the other case, a space more at
// either end. A store that ignores trailing spaces (a PAD SPACE collation)
// meets its twin only where the draw picks that kind, so a generated rule
// picks among all of them.
func Twins(s string) [][2]string {
	var out [][2]string
	if strings.Contains(s, nfcE) {
		out = append(out, [2]string{strings.Replace(s, nfcE, nfdE, 1), "NFC/NFD twin"})
	}
	if strings.Contains(s, nfdE) {
		out = append(out, [2]string{strings.Replace(s, nfdE, nfcE, 1), "NFD/NFC twin"})
	}
	if utf8.RuneCountInString(s) >= 256 {
		out = append(out, [2]string{s[:len(s)-1] + flip(s[len(s)-1]), "differs past 255 characters"})
	}
	if u := strings.ToUpper(s); u != s {
		out = append(out, [2]string{u, "case twin"})
	} else if l := strings.ToLower(s); l != s {
		out = append(out, [2]string{l, "case twin"})
	}
	return append(out, [2]string{s + " ", "trailing-space twin"}, [2]string{" " + s, "leading-space twin"})
}

func flip(b byte) string {
	if b == 'x' {
		return "y"
	}
	return "x"
}

// The classes of Bytes values.
const (
	ClassEmpty      = "empty"
	ClassJSON       = "JSON (odd whitespace, key order)"
	ClassBinary     = "binary"
	ClassInvalidUTF = "invalid UTF-8"
	ClassLarge      = "large (>=1 MiB)"
)

// MiB is the size of the large class's smallest body.
const MiB = 1 << 20

// Body generates event bodies: empty, JSON whose whitespace and key order a
// JSON round trip would change, binary with NUL and high bytes, invalid
// UTF-8, and large (1 MiB and a little more, a repeated pattern so that
// drawing it stays cheap). large=false leaves the large class out.
func Body(large bool) *rapid.Generator[Bytes] {
	classes := []*rapid.Generator[Bytes]{
		rapid.Just(Bytes{ClassEmpty, []byte{}}),
		rapid.Custom(func(t *rapid.T) Bytes {
			k := rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "k")
			ws := rapid.SampledFrom([]string{"", " ", "\n\t", "  \r\n"}).Draw(t, "ws")
			return Bytes{ClassJSON, []byte(`{"z":1,` + ws + `"` + k + `"` + ws + `:` + ws + `"` + nfdE + `",  "a":[ 1 ,2 ],"z2":null}` + ws)}
		}),
		rapid.Custom(func(t *rapid.T) Bytes {
			b := rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "b")
			return Bytes{ClassBinary, append([]byte{0x00, 0xff}, b...)}
		}),
		rapid.Custom(func(t *rapid.T) Bytes {
			return Bytes{ClassInvalidUTF, []byte("ok" + string([]byte{0xc3, 0x28, 0xa0, 0xa1, 0xed, 0xa0, 0x80}) + rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "s"))}
		}),
	}
	if large {
		classes = append(classes, rapid.Custom(func(t *rapid.T) Bytes {
			pat := rapid.SliceOfN(rapid.Byte(), 7, 31).Draw(t, "pattern")
			n := MiB + rapid.IntRange(1, 4096).Draw(t, "extra")
			b := make([]byte, n)
			for i := range b {
				b[i] = pat[i%len(pat)] ^ byte(i>>12)
			}
			return Bytes{ClassLarge, b}
		}))
	}
	return rapid.OneOf(classes...)
}

// Metadata generates metadata maps with odd keys: empty, spaces, case twins,
// dots and separators, Unicode in both normalization forms, a long key.
func Metadata() *rapid.Generator[map[string]string] {
	key := rapid.SampledFrom([]string{"", " ", "Key", "key", "a.b", "a/b", "x-Trace-ID", "caf" + nfcE, "caf" + nfdE, "$ref", strings.Repeat("k", 300)})
	return rapid.MapOfN(key, rapid.StringMatching(`[ -~]{0,16}`), 0, 6)
}
