package eventstore

import (
	"crypto/md5"
	"crypto/sha256"
	"hash/crc32"
	"hash/fnv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/onceproof/tck/internal/gen"
)

// javaHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 units.
func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func fnv32a(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// TestIDPairsCollide: every hash pair really collides, with any suffix,
// and every pair is two different strings.
func TestIDPairsCollide(t *testing.T) {
	for _, suffix := range []string{"", "-x", "-req-é 中\U0001F600" + string(make([]byte, 300))} {
		seen := map[string]bool{}
		for _, p := range idPairs(suffix) {
			if p.a == p.b {
				t.Errorf("%q: the pair is one string", p.a)
			}
			if seen[p.a+"\x00"+p.b] {
				t.Errorf("%q %q: listed twice", p.a, p.b)
			}
			seen[p.a+"\x00"+p.b] = true
			var ha, hb uint64
			switch p.class {
			case classJavaHash:
				ha, hb = uint64(uint32(javaHash(p.a))), uint64(uint32(javaHash(p.b)))
			case classFNV:
				ha, hb = uint64(fnv32a(p.a)), uint64(fnv32a(p.b))
			case classCRC:
				ha, hb = uint64(crc32.ChecksumIEEE([]byte(p.a))), uint64(crc32.ChecksumIEEE([]byte(p.b)))
			case classSHA256:
				x, y := sha256.Sum256([]byte(p.a)), sha256.Sum256([]byte(p.b))
				ha, hb = uint64(x[0])<<24|uint64(x[1])<<16|uint64(x[2])<<8|uint64(x[3]), uint64(y[0])<<24|uint64(y[1])<<16|uint64(y[2])<<8|uint64(y[3])
			case classMD5:
				x, y := md5.Sum([]byte(p.a)), md5.Sum([]byte(p.b))
				ha, hb = uint64(x[0])<<24|uint64(x[1])<<16|uint64(x[2])<<8|uint64(x[3]), uint64(y[0])<<24|uint64(y[1])<<16|uint64(y[2])<<8|uint64(y[3])
			case classCase, classAccent, classNFKC:
				// One under the fold the class names, two byte for byte.
				if fold(p.class, p.a) != fold(p.class, p.b) {
					t.Errorf("%q and %q (%s) differ once folded: %q vs %q", p.a, p.b, p.class, fold(p.class, p.a), fold(p.class, p.b))
				}
				continue
			default:
				continue
			}
			if ha != hb {
				t.Errorf("%q and %q (%s) do not collide: %x vs %x", p.a, p.b, p.class, ha, hb)
			}
		}
	}
}

// fold is s under the fold of class: the stores' own (x/text's full case
// folding, accents dropped after canonical decomposition, NFKC).
func fold(class, s string) string {
	var t transform.Transformer
	switch class {
	case classCase:
		t = cases.Fold()
	case classAccent:
		t = transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	default:
		t = norm.NFKC
	}
	out, _, err := transform.String(t, s)
	if err != nil {
		return "fold failed: " + err.Error()
	}
	return out
}

// TestIDPairsFirstOfClass: under each fold (and the single-byte charset),
// the first pair ES-1.15 stores that the fold takes for one is of the
// fold's own class, so a failure's first line names the shortcut. (Later
// pairs may be one under several: full case folding takes the ligature
// "ﬁ" for "fi".)
func TestIDPairsFirstOfClass(t *testing.T) {
	latin1 := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r > 0xff {
				return '?'
			}
			return r
		}, s)
	}
	for _, c := range []string{classCase, classAccent, classNFKC, gen.PairCharset} {
		f := func(s string) string { return fold(c, s) }
		if c == gen.PairCharset {
			f = latin1
		}
		for _, p := range idPairs("-x") {
			if f(p.a) == f(p.b) {
				if p.class != c {
					t.Errorf("the first pair one under the fold of %s is %q and %q, of %s", c, p.a, p.b, p.class)
				}
				break
			}
		}
	}
}
