package gen

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// IDPair is two different ids that a common store or service shortcut
// takes for one: equal under a hash, matched by a pattern, alike once
// decoded or folded into a narrower charset. Both are ids of their own;
// a contract that compares ids byte for byte keeps them two.
type IDPair struct {
	A, B  string
	Class string // the shortcut, as a failure's first line names it
}

// The shortcut classes of IDPairs.
const (
	PairJavaHash = "a Java String.hashCode collision"
	PairFNV      = "an FNV-1a-32 collision"
	PairCRC      = "a CRC32 (IEEE) collision"
	PairLike     = "a SQL LIKE metacharacter where the other id has an ordinary character"
	PairGlob     = "a glob or regex metacharacter where the other id has an ordinary character"
	PairURL      = "a URL-reserved character and its encoded or decoded twin"
	PairCharset  = "ids differing only in a letter outside Latin-1"
	PairCase     = "ids differing only in letter case"
	PairAccent   = "ids differing only in accents"
	PairNFKC     = "a Unicode compatibility character and its NFKC form"
	PairSHA256   = "a collision of SHA-256 cut to 32 bits"
	PairMD5      = "a collision of MD5 cut to 32 bits"
)

// IDPairs are the pairs, each id ending in suffix (a common suffix keeps
// every hash collision below: Java's hashCode of equal-length strings,
// FNV-1a's and CRC32's running state). The FNV-1a-32 and CRC32 pairs were
// found by a birthday search over "req-" and six characters of [a-z0-9];
// the event-store suite's TestIDPairsCollide checks that they collide.
// A 32-bit cut of SHA-256 or MD5 collides for one suffix only (the whole
// state is wider than the cut), so those pairs are searched for the suffix
// at hand (truncPair). ES-1.15 stores every pair; the api suite's API-1.6
// sends those its id's place can carry.
func IDPairs(suffix string) []IDPair {
	sa, sb := truncPair("sha256", sha256First4, suffix)
	ma, mb := truncPair("md5", md5First4, suffix)
	return []IDPair{
		{"Aa" + suffix, "BB" + suffix, PairJavaHash},
		{"order-Aa-" + suffix, "order-BB-" + suffix, PairJavaHash},
		{"AaAa" + suffix, "BBBB" + suffix, PairJavaHash},
		{"x-AaBB-" + suffix, "x-BBAa-" + suffix, PairJavaHash},
		{"req-6vlfaa" + suffix, "req-npdhaa" + suffix, PairFNV},
		{"req-x98cda" + suffix, "req-dvdbpa" + suffix, PairCRC},
		{"order_1" + suffix, "orderX1" + suffix, PairLike},
		{"order%" + suffix, "order-12" + suffix, PairLike},
		{"a%z" + suffix, "az" + suffix, PairLike},
		{`a\_z` + suffix, `a_z` + suffix, PairLike},
		{"order*" + suffix, "order-12" + suffix, PairGlob},
		{"order?" + suffix, "order1" + suffix, PairGlob},
		{"order[1]" + suffix, "order1" + suffix, PairGlob},
		{"order[12]" + suffix, "order1" + suffix, PairGlob},
		{"order.1" + suffix, "orderX1" + suffix, PairGlob},
		{`order\d` + suffix, `orderd` + suffix, PairGlob},
		{"a+b" + suffix, "a b" + suffix, PairURL},
		{"a+b" + suffix, "a%2Bb" + suffix, PairURL},
		{"a b" + suffix, "a%20b" + suffix, PairURL},
		{"a/b" + suffix, "a%2Fb" + suffix, PairURL},
		{"a%2Fb" + suffix, "a%252Fb" + suffix, PairURL},
		// Before the charset pairs: a folding store takes those too (a
		// combining mark and its precomposed letter), and a failure's
		// first line should name the fold's own class.
		{"Order-1" + suffix, "order-1" + suffix, PairCase},
		{"STRASSE" + suffix, "strasse" + suffix, PairCase},
		{"stra\u00dfe" + suffix, "STRASSE" + suffix, PairCase}, // ß folds to "ss" (Unicode full case folding)
		{"resume" + suffix, "r\u00e9sum\u00e9" + suffix, PairAccent},
		{"naive" + suffix, "na\u00efve" + suffix, PairAccent},
		{"\ufb01le" + suffix, "file" + suffix, PairNFKC},          // the ligature ﬁ
		{"\uff21\uff22\uff11" + suffix, "AB1" + suffix, PairNFKC}, // fullwidth letters and digit
		{"x\u00b2" + suffix, "x2" + suffix, PairNFKC},             // superscript two
		{sa, sb, PairSHA256},
		{ma, mb, PairMD5},
		{"p\u0430y" + suffix, "pay" + suffix, PairCharset},              // Cyrillic а vs Latin a
		{"p\u0430y" + suffix, "p\u03b1y" + suffix, PairCharset},         // Cyrillic а vs Greek α
		{"\u03b1\u03b2" + suffix, "\u03b3\u03b4" + suffix, PairCharset}, // Greek
		{"\u8ba2\u5355" + suffix, "\u8a02\u55ae" + suffix, PairCharset}, // CJK: simplified vs traditional
		{"pay\U0001F34E" + suffix, "pay\U0001F34F" + suffix, PairCharset},
		{"e\u0301" + suffix, "\u00e9" + suffix, PairCharset},      // a combining mark vs precomposed
		{"a\u0301" + suffix, "a\u0300" + suffix, PairCharset},     // two combining marks
		{"\u1ebf" + suffix, "\u00ea\u0301" + suffix, PairCharset}, // precomposed beyond Latin-1 vs decomposed
	}
}

func sha256First4(b []byte) uint32 {
	h := sha256.Sum256(b)
	return binary.BigEndian.Uint32(h[:4])
}

func md5First4(b []byte) uint32 {
	h := md5.Sum(b)
	return binary.BigEndian.Uint32(h[:4])
}

// truncPairs remembers truncPair's answers: a search costs some hundred
// thousand hashes, and a rule asks for one suffix more than once.
var truncPairs = struct {
	sync.Mutex
	m map[string][2]string
}{m: map[string][2]string{}}

// truncPair is two ids, "req-" and six characters of [a-z0-9] then
// suffix, on which cut (a hash's first 4 bytes) agrees: a birthday search
// in a fixed order, so a suffix (and so a seed) gives one pair every time.
// About 2^16.4 ids are hashed on average, far inside the 36^6 there are.
func truncPair(name string, cut func([]byte) uint32, suffix string) (string, string) {
	key := name + "\x00" + suffix
	truncPairs.Lock()
	defer truncPairs.Unlock()
	if p, ok := truncPairs.m[key]; ok {
		return p[0], p[1]
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	buf := append([]byte("req-xxxxxx"), suffix...)
	id := func(n int) []byte {
		for i := 9; i >= 4; i-- {
			buf[i] = alphabet[n%36]
			n /= 36
		}
		return buf
	}
	seen := make(map[uint32]int, 1<<17)
	for n := 0; ; n++ {
		h := cut(id(n))
		if m, ok := seen[h]; ok {
			a := string(id(m))
			b := string(id(n))
			if len(truncPairs.m) > 64 { // a bound, not a cache policy: suffixes are per rule
				clear(truncPairs.m)
			}
			truncPairs.m[key] = [2]string{a, b}
			return a, b
		}
		seen[h] = n
	}
}
