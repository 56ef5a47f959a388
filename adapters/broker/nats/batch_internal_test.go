package nats

import "testing"

func TestBatchParseVersion(t *testing.T) {
	for in, want := range map[string][3]int{"2.12.0": {2, 12, 0}, "v2.15.2": {2, 15, 2}, "2.12.1-beta.3": {2, 12, 1}} {
		if got, ok := parseVersion(in); !ok || got != want {
			t.Errorf("parseVersion(%q) = %v %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "2.12", "x.y.z", "2.12.0.1"} {
		if _, ok := parseVersion(in); ok {
			t.Errorf("parseVersion(%q) read a version", in)
		}
	}
}
