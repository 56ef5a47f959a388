package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type colour string

type inner struct {
	Name  string `yaml:"name" t:"required"`
	Count int    `yaml:"count"`
}

type doc struct {
	Title   string        `yaml:"title" t:"required"`
	On      bool          `yaml:"on"`
	Colour  colour        `yaml:"colour"`
	Wait    time.Duration `yaml:"wait"`
	Items   []inner       `yaml:"items"`
	Extra   *inner        `yaml:"extra"`
	Ignored string        `yaml:"-"`
}

var opts = Options{
	RequiredTag: "t",
	Empty:       "empty test document",
	Enums:       map[reflect.Type][]string{reflect.TypeFor[colour](): {"red", "green"}},
	Types:       map[reflect.Type]DecodeFunc{reflect.TypeFor[time.Duration](): Duration},
}

func TestDecodes(t *testing.T) {
	var d doc
	pos, err := Decode("d.yaml", []byte("title: x\non: true\ncolour: green\nwait: 1m30s\nitems:\n  - name: a\n    count: 2\nextra: {name: b}\n"), &d, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := doc{Title: "x", On: true, Colour: "green", Wait: 90 * time.Second, Items: []inner{{Name: "a", Count: 2}}, Extra: &inner{Name: "b"}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %+v, want %+v", d, want)
	}
	for path, line := range map[string]int{"title": 1, "wait": 4, "items[0].count": 7, "extra.name": 8} {
		if pos[path] != line {
			t.Errorf("positions[%q] = %d, want %d", path, pos[path], line)
		}
	}
}

// Every refusal is one *Error whose text is file:line: field: msg.
func TestRefuses(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown field":    {"title: x\ncolor: red\n", "d.yaml:2: color: unknown field (fields here: colour, extra, items, on, title, wait)"},
		"given twice":      {"title: x\ntitle: y\n", "d.yaml:2: title: given twice"},
		"required missing": {"on: true\n", "d.yaml:1: title: required field missing"},
		"required nested":  {"title: x\nitems:\n  - count: 1\n", "d.yaml:3: items[0].name: required field missing"},
		"wrong type":       {"title: x\nitems:\n  - name: a\n    count: many\n", `d.yaml:4: items[0].count: want a whole number, got str "many"`},
		"not a bool":       {"title: x\non: 1\n", `d.yaml:2: on: want true or false, got int "1"`},
		"not a list":       {"title: x\nitems: a\n", `d.yaml:2: items: want a list, got str "a"`},
		"enum value":       {"title: x\ncolour: blue\n", `d.yaml:2: colour: "blue" is not one of red, green`},
		"bare duration":    {"title: x\nwait: 300\n", `d.yaml:2: wait: want a duration with its unit such as 5m, 30s or 1h30m, got int "300"`},
		"bad duration":     {"title: x\nwait: soon\n", `d.yaml:2: wait: want a duration with its unit such as 5m, 30s or 1h30m, got "soon"`},
		"negative":         {"title: x\nwait: -1s\n", "d.yaml:2: wait: a duration must not be negative, got -1s"},
		"null":             {"title: x\nextra:\n", "d.yaml:2: extra: empty value; give one or leave the field out"},
		"not a mapping":    {"- a\n", "d.yaml:1: (document): want a mapping of fields, got a list"},
		"empty":            {"", "d.yaml:1: (document): empty test document"},
		"syntax":           {"title: [\n", "d.yaml:1: (document): did not find expected node content"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var d doc
			_, err := Decode("d.yaml", []byte(c.yaml), &d, opts)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			if err.Error() != c.want {
				t.Errorf("got  %s\nwant %s", err, c.want)
			}
		})
	}
}

// A DecodeFunc's own error is placed at its node; an *Error passes as is.
func TestDecodeFuncErrors(t *testing.T) {
	mine := &Error{File: "elsewhere", Line: 9, Field: "f", Msg: "as given"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("no thanks"), "d.yaml:2: wait: no thanks"},
		{mine, "elsewhere:9: f: as given"},
	} {
		o := opts
		o.Types = map[reflect.Type]DecodeFunc{reflect.TypeFor[time.Duration](): func(*yaml.Node, reflect.Value) error { return c.err }}
		var d doc
		if _, err := Decode("d.yaml", []byte("title: x\nwait: 1s\n"), &d, o); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

func TestErrorWithoutLine(t *testing.T) {
	e := &Error{File: "p.yaml", Msg: "cannot read: no such file"}
	if got := e.Error(); got != "p.yaml: cannot read: no such file" {
		t.Errorf("got %q", got)
	}
}

func TestFields(t *testing.T) {
	var got []string
	for _, f := range Fields(reflect.TypeFor[doc](), "t") {
		if f.Required {
			got = append(got, f.Name+"!")
		} else {
			got = append(got, f.Name)
		}
	}
	if s := strings.Join(got, " "); s != "colour extra items on title! wait" {
		t.Errorf("got %s", s)
	}
}

// bomb is nested aliases: each level lists the previous one width times.
func bomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("title: x\nitems: &l0 [{name: a}]\n")
	for l := 1; l <= levels; l++ {
		fmt.Fprintf(&b, "l%d: &l%d [", l, l)
		for i := 0; i < width; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", l-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// Nested aliases are refused quickly, before the decode walks them, at the
// line where the expansion crossed the bound; a modest alias still works.
func TestRefusesAliasBomb(t *testing.T) {
	var d doc
	start := time.Now()
	_, err := Decode("d.yaml", []byte(bomb(3, 300)), &d, opts)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "aliases expand to more than") || e.Line != 4 {
		t.Fatalf("got %v, want the alias bound at line 4", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s", el)
	}
	ok := "title: x\nitems: &a [{name: a}]\nextra: *a\n"
	if _, err := Decode("d.yaml", []byte(ok), &d, opts); err == nil || !strings.Contains(err.Error(), "want a mapping") {
		t.Errorf("a plain alias: got %v, want it decoded (and refused as a list for a struct)", err)
	}
}

func TestRefusesSecondDocument(t *testing.T) {
	var d doc
	_, err := Decode("d.yaml", []byte("title: x\n---\ntitle: y\n"), &d, opts)
	if err == nil || err.Error() != "d.yaml:2: (document): a second YAML document (after ---): the file holds one document" {
		t.Fatalf("got %v", err)
	}
	if _, err := Decode("d.yaml", []byte("---\ntitle: x\n"), &d, opts); err != nil {
		t.Errorf("a leading ---: %v", err)
	}
}
