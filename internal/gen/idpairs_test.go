package gen

import (
	"strings"
	"testing"
)

// TestTruncPairReplays: the 32-bit cuts' pairs are found for the suffix at
// hand, both ids "req-" and six characters of [a-z0-9] then the suffix,
// and a second search (a replayed seed's) finds the same pair.
func TestTruncPairReplays(t *testing.T) {
	for _, suffix := range []string{"", "-x", "-é中\U0001F600"} {
		for _, c := range []struct {
			name string
			cut  func([]byte) uint32
		}{{"sha256", sha256First4}, {"md5", md5First4}} {
			a, b := truncPair(c.name, c.cut, suffix)
			if a == b || !strings.HasSuffix(a, suffix) || !strings.HasSuffix(b, suffix) || len(a) != len("req-xxxxxx")+len(suffix) || !strings.HasPrefix(a, "req-") || !strings.HasPrefix(b, "req-") {
				t.Errorf("%s %q: %q and %q are not two ids of the search's shape", c.name, suffix, a, b)
			}
			if c.cut([]byte(a)) != c.cut([]byte(b)) {
				t.Errorf("%s %q: %q and %q do not collide", c.name, suffix, a, b)
			}
			truncPairs.Lock()
			clear(truncPairs.m) // search again, not from memory
			truncPairs.Unlock()
			if a2, b2 := truncPair(c.name, c.cut, suffix); a2 != a || b2 != b {
				t.Errorf("%s %q: a second search found %q and %q, the first %q and %q", c.name, suffix, a2, b2, a, b)
			}
		}
	}
}
