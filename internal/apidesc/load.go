package apidesc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a malformed description: one line naming the file, line and field.
type Error struct {
	File  string
	Line  int
	Field string // path such as create.id.in; "" for the document
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

// Load reads and validates a description file (YAML or JSON).
func Load(path string) (*Description, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: "cannot read the endpoint description: " + err.Error()}
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse decodes and validates a description; name is used in errors and as
// the description's File.
func Parse(name string, data []byte) (*Description, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		return nil, e
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: name, Line: 1, Msg: "empty endpoint description"}
	}
	d := &Description{}
	dec := decoder{file: name, pos: map[string]int{}}
	if err := dec.decode(doc.Content[0], reflect.ValueOf(d).Elem(), ""); err != nil {
		return nil, err
	}
	if err := d.validate(dec); err != nil {
		return nil, err
	}
	d.File = name
	d.fill()
	return d, nil
}

// validate checks what the types cannot: placements, placeholders, statuses.
func (d *Description) validate(dec decoder) error {
	errf := func(field, format string, args ...any) error {
		return &Error{File: dec.file, Line: dec.line(field), Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if d.Contract != Reject409 && d.Contract != Replay {
		return errf("contract", "%q is not one of %s, %s", d.Contract, Reject409, Replay)
	}
	switch d.Create.Method {
	case "", "POST", "PUT", "PATCH", "post", "put", "patch":
	default:
		return errf("create.method", "%q: a create is POST, PUT or PATCH", d.Create.Method)
	}
	if !strings.HasPrefix(d.Create.Path, "/") {
		return errf("create.path", "want a path starting with /, got %q", d.Create.Path)
	}
	if err := d.place(dec, "create.id", d.Create.ID, "{id}", true); err != nil {
		return err
	}
	if d.Scope != nil {
		if err := d.place(dec, "scope", *d.Scope, "{scope}", false); err != nil {
			return err
		}
	}
	if _, ok := d.Create.Body[d.Create.Vary]; !ok {
		return errf("create.vary", "%q is not a field of create.body", d.Create.Vary)
	}
	switch d.Create.Body[d.Create.Vary].(type) {
	case int, float64, string:
	default:
		return errf("create.vary", "field %q of create.body must be a number or a string", d.Create.Vary)
	}
	if _, err := json.Marshal(d.Create.Body); err != nil {
		return errf("create.body", "not expressible as JSON: %v", err)
	}
	if !strings.HasPrefix(d.Read.Path, "/") || !strings.Contains(d.Read.Path, "{id}") {
		return errf("read.path", "want a path starting with / holding {id}, got %q", d.Read.Path)
	}
	if d.List != nil && (!strings.HasPrefix(d.List.Path, "/") || !strings.Contains(d.List.Path, "{id}")) {
		return errf("list.path", "want a path starting with / holding {id}, got %q", d.List.Path)
	}
	for field, codes := range map[string][]int{
		"create.created": d.Create.Created, "read.found": d.Read.Found, "read.missing": d.Read.Missing,
		"answers.repeat": d.Answers.Repeat, "answers.mismatch": d.Answers.Mismatch, "answers.inFlight": d.Answers.InFlight,
	} {
		for _, c := range codes {
			if c < 100 || c > 599 {
				return errf(field, "%d is not an HTTP status", c)
			}
		}
	}
	for _, c := range d.Create.Created {
		if c >= 300 {
			return errf("create.created", "%d is not a success status", c)
		}
	}
	if d.Contract == Replay && len(d.Answers.Repeat) > 0 {
		return errf("answers.repeat", "under replay a repeat gets the first response; leave answers.repeat out")
	}
	if d.Contract == Reject409 && len(d.Answers.InFlight) > 0 {
		return errf("answers.inFlight", "reject-409 answers every repeat with answers.repeat; inFlight is for replay")
	}
	return nil
}

func (d *Description) place(dec decoder, field string, p Place, placeholder string, isID bool) error {
	errf := func(f, format string, args ...any) error {
		return &Error{File: dec.file, Line: dec.line(f), Field: f, Msg: fmt.Sprintf(format, args...)}
	}
	switch p.In {
	case InHeader, InQuery:
		if p.Name == "" {
			return errf(field+".name", "a %s needs its name", p.In)
		}
	case InBody:
		if !isID {
			return errf(field+".in", "a scope goes in a header, the query or the path")
		}
		if p.Name == "" {
			return errf(field+".name", "a body field needs its name")
		}
	case InPath:
		if !strings.Contains(d.Create.Path, placeholder) {
			return errf("create.path", "the %s goes in the path, but the path %q holds no %s", field, d.Create.Path, placeholder)
		}
	default:
		return errf(field+".in", "%q is not one of header, body, path, query", p.In)
	}
	if !isID && p.In == InPath && !strings.Contains(d.Read.Path, placeholder) {
		return errf("read.path", "the scope goes in the path, but the read path %q holds no %s", d.Read.Path, placeholder)
	}
	return nil
}

// decoder maps YAML nodes onto the model strictly: an unknown field, a
// wrong type or a missing required field is an error at its line.
type decoder struct {
	file string
	pos  map[string]int
}

func (dec decoder) line(field string) int {
	for f := field; f != ""; {
		if l, ok := dec.pos[f]; ok {
			return l
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return 1
}

func (dec decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: dec.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

func (dec decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, ok := dec.pos[path]; !ok {
		dec.pos[path] = n.Line
	}
	if n.Tag == "!!null" {
		return dec.errf(n, path, "empty value; give one or leave the field out")
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if err := dec.decode(n, nv.Elem(), path); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case reflect.Struct:
		return dec.mapping(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return dec.errf(n, path, "want a mapping (a JSON object), got %s", describe(n))
		}
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			return dec.errf(n, path, "%v", err)
		}
		v.Set(reflect.ValueOf(m))
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return dec.errf(n, path, "want a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := dec.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return dec.errf(n, path, "want a string, got %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return dec.errf(n, path, "want a whole number, got %s", describe(n))
		}
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			return dec.errf(n, path, "want a whole number, got %q", n.Value)
		}
		v.SetInt(int64(i))
		return nil
	}
	return dec.errf(n, path, "the kit cannot decode a %s (a bug)", t)
}

func (dec decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return dec.errf(n, path, "want a mapping of fields, got %s", describe(n))
	}
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			return dec.errf(k, fp, "unknown field (fields here: %s)", strings.Join(fieldNames(v.Type()), ", "))
		}
		if seen[k.Value] {
			return dec.errf(k, fp, "given twice")
		}
		seen[k.Value] = true
		dec.pos[fp] = k.Line
		if err := dec.decode(val, v.FieldByIndex(f.index), fp); err != nil {
			return err
		}
	}
	for _, name := range fieldNames(v.Type()) {
		if fields[name].required && !seen[name] {
			return dec.errf(n, join(path, name), "required field missing")
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

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), n.Value)
}

type field struct {
	index    []int
	required bool
}

func fieldsOf(t reflect.Type) map[string]field {
	out := map[string]field{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out[name] = field{index: f.Index, required: f.Tag.Get("apidesc") == "required"}
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for n := range fieldsOf(t) {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
