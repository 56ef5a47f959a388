package gen

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
)

// IDPairs are the pairs, each id ending in suffix (a common suffix keeps
// every hash collision below: Java's hashCode of equal-length strings,
// FNV-1a's and CRC32's running state). The FNV-1a-32 and CRC32 pairs were
// found by a birthday search over "req-" and six characters of [a-z0-9];
// the event-store suite's TestIDPairsCollide checks that they collide.
// ES-1.15 stores every pair; the api suite's API-1.6 sends those its id's
// place can carry.
func IDPairs(suffix string) []IDPair {
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
