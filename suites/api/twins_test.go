package api

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/onceproof/tck/internal/apidesc"
)

func javaHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// API-1.6's pairs fit the id's place: a header id is printable ASCII with
// no surrounding space, a path id holds no "/", space, "\" or "%2F"; each
// pair is two ids under one scope, and a hash pair still collides once the
// drawn id follows its core.
func TestTwinTrialsFitTheirPlace(t *testing.T) {
	for _, in := range []string{apidesc.InHeader, apidesc.InBody, apidesc.InQuery, apidesc.InPath} {
		d := apidesc.Default(apidesc.Replay)
		d.Create.ID = apidesc.Place{In: in, Name: "requestId"}
		if in == apidesc.InPath {
			d.Create.Path = "/orders/{id}"
		}
		v := newValues(d, 7, "API-1.6")
		trials, err := v.twinTrials("API-1.6")
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		kinds := map[string]int{}
		for _, tr := range trials {
			kinds[tr.kind]++
			if tr.base.id == tr.twin.id && tr.base.scope == tr.twin.scope {
				t.Errorf("%s: %s: one id twice: %q", in, tr.label, tr.base.id)
			}
			for _, id := range []string{tr.base.id, tr.twin.id} {
				switch in {
				case apidesc.InHeader, apidesc.InPath:
					if strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 || strings.TrimSpace(id) != id {
						t.Errorf("%s: %s: %q is not a header-safe id", in, tr.label, id)
					}
				}
				if in == apidesc.InPath && (strings.ContainsAny(id, "/ \\") || strings.Contains(strings.ToUpper(id), "%2F")) {
					t.Errorf("path: %s: %q does not survive a router", tr.label, id)
				}
			}
			if tr.kind == twinHash && strings.HasPrefix(tr.label, "hash twin \"A") && javaHash(tr.base.id) != javaHash(tr.twin.id) {
				t.Errorf("%s: %s: %q and %q do not collide", in, tr.label, tr.base.id, tr.twin.id)
			}
			if len(tr.label) > 90 && tr.kind != twinSplit {
				t.Errorf("%s: the label %q is too long for a first line", in, tr.label)
			}
		}
		want := []string{twinURL, twinMeta, twinHash}
		if in == apidesc.InBody || in == apidesc.InQuery {
			want = append(want, twinScript)
		}
		for _, k := range want {
			if kinds[k] == 0 {
				t.Errorf("%s: no %s", in, k)
			}
		}
		if in == apidesc.InHeader && kinds[twinScript] > 0 {
			t.Errorf("header: %d script twins, which a header cannot carry", kinds[twinScript])
		}
		if got := v.pairKinds(); in == apidesc.InHeader && slices.Contains(got, twinScript) {
			t.Errorf("header: pair kinds %v", got)
		}
		t.Logf("%s: %d pairs: %v", in, len(trials), kinds)
	}
}
