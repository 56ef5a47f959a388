package apidesc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/onceproof/tck/internal/strictyaml"
)

// Error is a malformed description: one line naming the file, line and
// field (the same type as every strictly decoded file's error).
type Error = strictyaml.Error

// Load reads and validates a description file (YAML or JSON).
func Load(path string) (*Description, error) {
	data, err := strictyaml.ReadFile(path, "endpoint description", strictyaml.MaxBytes)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// decodeOptions decode a description strictly: `apidesc:"required"` marks
// the fields it must give; a body is a free-form JSON object.
var decodeOptions = strictyaml.Options{
	RequiredTag: "apidesc",
	Empty:       "empty endpoint description",
	Types:       map[reflect.Type]strictyaml.DecodeFunc{reflect.TypeFor[map[string]any](): decodeObject},
}

func decodeObject(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping (a JSON object), got %s", strictyaml.Describe(n))
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return err
	}
	v.Set(reflect.ValueOf(m))
	return nil
}

// Parse decodes and validates a description; name is used in errors and as
// the description's File.
func Parse(name string, data []byte) (*Description, error) {
	d := &Description{}
	pos, err := strictyaml.Decode(name, data, d, decodeOptions)
	if err != nil {
		return nil, err
	}
	if err := d.validate(decoded{file: name, pos: pos}); err != nil {
		return nil, err
	}
	d.File = name
	d.fill()
	return d, nil
}

// validate checks what the types cannot: placements, placeholders, statuses.
func (d *Description) validate(dec decoded) error {
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
	if err := d.checkRequest(dec); err != nil {
		return err
	}
	if d.Retention != "" {
		if _, err := parseRetention(d.Retention); err != nil {
			return errf("retention", "%v: want a duration such as 24h or 7d", err)
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

func (d *Description) place(dec decoded, field string, p Place, placeholder string, isID bool) error {
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

// decoded is where a decoded description's fields are, for validate.
type decoded struct {
	file string
	pos  map[string]int
}

// line is the line of field, else of its nearest parent given, else 1.
func (dec decoded) line(field string) int {
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
