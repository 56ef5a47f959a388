// Package strictyaml decodes a YAML (or JSON) document onto a Go struct
// strictly, for the kit's configuration files (profiles, endpoint
// descriptions): an unknown field, a field given twice, a missing required
// field, an empty value, a wrong type or a value outside an enum is an
// *Error naming the file, line and field, so a user gets one clear line
// instead of a silently ignored typo.
//
// Fields are named by their `yaml` tag; a field whose Options.RequiredTag
// tag is "required" must be given. Strings, bools, ints, slices, pointers
// and nested structs decode by kind; any other type needs a DecodeFunc in
// Options.Types (Duration is one for durations).
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is a malformed document: one line naming the file, line and field.
type Error struct {
	File  string
	Line  int    // 0 when the error is about the file as a whole
	Field string // path such as producers[0].retries[1]; "" for the document
	Msg   string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	field := e.Field
	if field == "" {
		field = "(document)"
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, field, e.Msg)
}

// DecodeFunc decodes a non-null node into v, a value of the type it is
// registered for. An error that is not an *Error becomes the message of
// one at the node's line and field.
type DecodeFunc func(n *yaml.Node, v reflect.Value) error

// Options are what differs between the kit's document kinds.
type Options struct {
	// RequiredTag is the struct tag key whose value "required" marks a
	// field the document must give (`profile:"required"`).
	RequiredTag string
	// Empty is the message for a document with no content ("empty profile").
	Empty string
	// Enums lists the values a string type may take.
	Enums map[reflect.Type][]string
	// Types decodes the types the kinds above do not cover.
	Types map[reflect.Type]DecodeFunc
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Decode decodes data, named file in errors, into out (a pointer to a
// struct). It returns the line of every field path it saw, for the
// checks a caller makes after decoding.
func Decode(file string, data []byte, out any, opts Options) (positions map[string]int, err error) {
	if len(data) > MaxBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("%d bytes, more than %s, the most a configuration file may hold", len(data), byteSize(MaxBytes))}
	}
	syntax := func(err error) error {
		e := &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		return e
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntax(err)
	}
	// A second document (after ---) would be silently ignored: refuse it.
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		return nil, &Error{File: file, Line: second.Line, Msg: "a second YAML document (after ---): the file holds one document"}
	case !errors.Is(err, io.EOF):
		return nil, syntax(err)
	}
	if err := checkExpansion(file, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		msg := opts.Empty
		if msg == "" {
			msg = "empty document"
		}
		return nil, &Error{File: file, Line: 1, Msg: msg}
	}
	d := decoder{file: file, opts: opts, pos: map[string]int{}}
	if err := d.decode(doc.Content[0], reflect.ValueOf(out).Elem(), ""); err != nil {
		return nil, err
	}
	return d.pos, nil
}

// MaxBytes bounds a configuration file: the kit's largest is a few KB.
// ReadFile with it reads no more than this (plus one byte).
const MaxBytes = 1 << 20

// MaxNodes bounds the nodes a document holds once every alias is expanded:
// nested aliases (a "billion laughs") grow exponentially, and the decode
// walks each expanded node, so the expansion is counted before it is walked.
const MaxNodes = 100_000

// checkExpansion counts the nodes of doc with every alias expanded, in time
// linear in the tree (each node's expanded size is computed once), and
// refuses a document past MaxNodes at the line of the alias that crossed it.
func checkExpansion(file string, doc *yaml.Node) error {
	size := map[*yaml.Node]int{}
	var culprit *yaml.Node
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		if s, ok := size[n]; ok {
			return s
		}
		size[n] = MaxNodes + 1 // a node reached again while counting it: a cycle
		s := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s = count(n.Alias)
		}
		for _, c := range n.Content {
			s += count(c)
			if s > MaxNodes {
				s = MaxNodes + 1 // saturate: never overflow
				break
			}
		}
		if s > MaxNodes && culprit == nil {
			culprit = n // the first (deepest) node past the bound
		}
		size[n] = s
		return s
	}
	if count(doc) <= MaxNodes {
		return nil
	}
	return &Error{File: file, Line: culprit.Line, Msg: fmt.Sprintf("the aliases expand to more than %d nodes (nested *alias references): write the values out", MaxNodes)}
}

// Duration is a DecodeFunc for a duration type (int64 nanoseconds, such as
// time.Duration): a string with its unit, never negative.
func Duration(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		// A bare 300 could mean seconds or nanoseconds: refuse to guess.
		return fmt.Errorf("want a duration with its unit such as 5m, 30s or 1h30m, got %s", Describe(n))
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration with its unit such as 5m, 30s or 1h30m, got %q", n.Value)
	}
	if dur < 0 {
		return fmt.Errorf("a duration must not be negative, got %s", n.Value)
	}
	v.SetInt(int64(dur))
	return nil
}

// Describe names a node for a "want X, got Y" message: a mapping, a list,
// or its tag and value (int "300").
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), n.Value)
}

// Field is one decodable field of a struct.
type Field struct {
	Name     string // its yaml name
	Index    []int  // for reflect.Value.FieldByIndex
	Required bool
}

// Fields lists the fields of struct type t a document may give, by name;
// requiredTag is as in Options.
func Fields(t reflect.Type, requiredTag string) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, Field{Name: name, Index: f.Index, Required: f.Tag.Get(requiredTag) == "required"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type decoder struct {
	file string
	opts Options
	pos  map[string]int
}

func (d decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

func (d decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = n.Line
	}
	if n.Tag == "!!null" {
		return d.errf(n, path, "empty value; give one or leave the field out")
	}
	t := v.Type()
	if f, ok := d.opts.Types[t]; ok {
		err := f(n, v)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			return d.errf(n, path, "%s", err)
		}
		return err
	}
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if err := d.decode(n, nv.Elem(), path); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case reflect.Struct:
		return d.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "want a list, got %s", Describe(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errf(n, path, "want a string, got %s", Describe(n))
		}
		if allowed, ok := d.opts.Enums[t]; ok && !slices.Contains(allowed, n.Value) {
			return d.errf(n, path, "%q is not one of %s", n.Value, strings.Join(allowed, ", "))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errf(n, path, "want true or false, got %s", Describe(n))
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
		return nil
	case reflect.Int:
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			// A whole number past int64 (YAML tags a negative one a float).
			// (A long one is bounded before math/big sees it: its parse is
			// superlinear, and the line stays short.)
			digits := strings.ReplaceAll(n.Value, "_", "")
			if len(digits) > 100 && strings.Trim(digits, "+-0123456789") == "" {
				return d.errf(n, path, "a number of %d digits is out of range: a whole number from %d to %d", len(digits), math.MinInt64, math.MaxInt64)
			}
			if len(digits) <= 100 {
				if b, ok := new(big.Int).SetString(digits, 0); ok && !b.IsInt64() {
					return d.errf(n, path, "%s is out of range: a whole number from %d to %d", n.Value, math.MinInt64, math.MaxInt64)
				}
			}
		}
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
			return d.errf(n, path, "want a whole number, got %s", Describe(n))
		}
		v.SetInt(i)
		return nil
	}
	return d.errf(n, path, "the kit cannot decode a %s (a bug)", t)
}

func (d decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping of fields, got %s", Describe(n))
	}
	fields := Fields(v.Type(), d.opts.RequiredTag)
	byName := map[string]Field{}
	var names []string
	for _, f := range fields {
		byName[f.Name] = f
		names = append(names, f.Name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		f, ok := byName[k.Value]
		if !ok {
			return d.errf(k, fp, "unknown field (fields here: %s)", strings.Join(names, ", "))
		}
		if seen[k.Value] {
			return d.errf(k, fp, "given twice")
		}
		seen[k.Value] = true
		d.pos[fp] = k.Line
		if err := d.decode(val, v.FieldByIndex(f.Index), fp); err != nil {
			return err
		}
	}
	for _, f := range fields {
		if f.Required && !seen[f.Name] {
			return d.errf(n, join(path, f.Name), "required field missing")
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
