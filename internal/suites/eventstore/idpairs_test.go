package eventstore

import (
	"hash/crc32"
	"hash/fnv"
	"testing"
	"unicode/utf16"
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
			default:
				continue
			}
			if ha != hb {
				t.Errorf("%q and %q (%s) do not collide: %x vs %x", p.a, p.b, p.class, ha, hb)
			}
		}
	}
}
