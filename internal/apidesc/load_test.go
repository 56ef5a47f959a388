package apidesc

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The Python example's description is the default written out, and the
// worked examples of docs/api.md parse.
func TestExamplesParse(t *testing.T) {
	root := filepath.Join("..", "..", "examples", "api")
	d, err := Load(filepath.Join(root, "python", "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	def := Default(Reject409)
	d.File = ""
	if !reflect.DeepEqual(d, def) {
		t.Errorf("examples/api/python/api.yaml is not the default:\n%+v\n%+v", d, def)
	}
	for _, f := range []string{"wow-orders.yaml", "payments-replay.yaml"} {
		if _, err := Load(filepath.Join(root, "descriptions", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// A malformed description is one error naming the file, line and field.
func TestErrorsNameLineAndField(t *testing.T) {
	base := "contract: reject-409\ncreate:\n  path: /o\n  id:\n    in: header\n    name: K\n  body:\n    q: 1\n  vary: q\nread:\n  path: /o/{id}\n"
	cases := map[string]string{
		base:                "",
		base + "extra: 1\n": "d.yaml:12: extra: unknown field",
		strings.Replace(base, "q: 1", "q: [1]", 1):                                               "d.yaml:9: create.vary: field \"q\" of create.body must be a number or a string",
		strings.Replace(base, "vary: q", "vary: z", 1):                                           "d.yaml:9: create.vary: \"z\" is not a field of create.body",
		strings.Replace(base, "in: header", "in: path", 1):                                       "d.yaml:3: create.path: the create.id goes in the path",
		strings.Replace(base, "/o/{id}", "/o/x", 1):                                              "d.yaml:11: read.path: want a path starting with / holding {id}",
		strings.Replace(base, "name: K", "name: 5", 1):                                           "d.yaml:6: create.id.name: want a string",
		base + "answers:\n  repeat: [700]\n":                                                     "d.yaml:13: answers.repeat: 700 is not an HTTP status",
		strings.Replace(base, "reject-409", "replay", 1) + "answers:\n  repeat: [409]\n":         "d.yaml:13: answers.repeat: under replay",
		"contract: replay\n":                                                                     "d.yaml:1: create: required field missing",
		strings.Replace(base, "name: K", `name: "K\r\nX-Evil: 1"`, 1):                            "d.yaml:6: create.id.name: \"K\\r\\nX-Evil: 1\" is not a header name: \"\\r\" at byte 1",
		strings.Replace(base, "name: K", "name: "+strings.Repeat("K", 900<<10), 1):               "d.yaml:6: create.id.name: 921600 bytes, more than 256, the longest header name",
		strings.Replace(base, "in: header\n    name: K", "in: query\n    name: \"k\\u0007\"", 1): "d.yaml:6: create.id.name: holds the control character \"\\a\" at byte 1",
		strings.Replace(base, "/o/{id}", "/o/{id} x", 1):                                         "d.yaml:11: read.path: holds \" \" at byte 7",
		strings.Replace(base, "/o/{id}", "/o/"+strings.Repeat("x", 3000)+"{id}", 1):              "d.yaml:11: read.path: 3007 bytes, more than 2048",
		"": "d.yaml:1: (document): empty endpoint description",
	}
	for in, want := range cases {
		_, err := Parse("d.yaml", []byte(in))
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("%q: got %v, want %s…", in, err, want)
		}
	}
}
