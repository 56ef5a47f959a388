package profile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type schema = map[string]any

func loadSchema(t *testing.T) schema {
	t.Helper()
	var s schema
	if err := json.Unmarshal(JSONSchema, &s); err != nil {
		t.Fatalf("profile.schema.json: %v", err)
	}
	return s
}

// resolve follows a local $ref.
func resolve(root, s schema) schema {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return root["$defs"].(schema)[name].(schema)
	}
	return s
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	sort.Strings(out)
	return out
}

// TestSchemaMatchesModel: the schema names every field of the model and no
// other, with the same types, required fields and enums.
func TestSchemaMatchesModel(t *testing.T) {
	root := loadSchema(t)
	var walk func(s schema, typ reflect.Type, path string)
	walk = func(s schema, typ reflect.Type, path string) {
		s = resolve(root, s)
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		want := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Slice: "array", reflect.Struct: "object"}[typ.Kind()]
		if typ == durationType {
			want = "string"
			if _, ok := s["pattern"]; !ok {
				t.Errorf("%s: a duration without its pattern", path)
			}
		}
		if s["type"] != want {
			t.Errorf("%s: schema type %v, model %s (%s)", path, s["type"], want, typ)
			return
		}
		if allowed, ok := enums[typ]; ok {
			got, _ := s["enum"].([]any)
			w := append([]string(nil), allowed...)
			sort.Strings(w)
			if got == nil || fmt.Sprint(strs(s["enum"])) != fmt.Sprint(w) {
				t.Errorf("%s: schema enum %v, model %v", path, s["enum"], w)
			}
		}
		switch typ.Kind() {
		case reflect.Slice:
			walk(s["items"].(schema), typ.Elem(), path+"[]")
		case reflect.Struct:
			if s["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties must be false (the loader refuses unknown fields)", path)
			}
			props := s["properties"].(schema)
			fields := fieldsOf(typ)
			for _, name := range fieldNames(typ) {
				ps, ok := props[name]
				if !ok {
					t.Errorf("%s: the schema does not name the model's field %s", path, name)
					continue
				}
				walk(ps.(schema), typ.FieldByIndex(fields[name].index).Type, join(path, name))
			}
			for name := range props {
				if _, ok := fields[name]; !ok {
					t.Errorf("%s: the schema names %s, the model has no such field", path, name)
				}
			}
			var req []string
			for _, name := range fieldNames(typ) {
				if fields[name].required {
					req = append(req, name)
				}
			}
			var got []string
			if r, ok := s["required"]; ok {
				got = strs(r)
			}
			if fmt.Sprint(got) != fmt.Sprint(req) {
				t.Errorf("%s: schema requires %v, model %v", path, got, req)
			}
		}
	}
	walk(root, reflect.TypeFor[Profile](), "")
}

// validate is the part of JSON Schema the profile schema uses: enough to
// check the examples against the schema itself, not only the loader.
func validate(root, s schema, v any, path string) []string {
	s = resolve(root, s)
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	if c, ok := s["const"]; ok && v != c {
		bad("want %v", c)
	}
	if e, ok := s["enum"]; ok {
		if s, isStr := v.(string); !isStr || !contains(strs(e), s) {
			bad("%v not in %v", v, e)
		}
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object")
			return errs
		}
		props := s["properties"].(schema)
		for k, x := range m {
			ps, ok := props[k]
			if !ok {
				bad("unknown property %s", k)
				continue
			}
			errs = append(errs, validate(root, ps.(schema), x, path+"."+k)...)
		}
		if r, ok := s["required"]; ok {
			for _, k := range strs(r) {
				if _, ok := m[k]; !ok {
					bad("missing %s", k)
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array")
			return errs
		}
		if n, ok := s["minItems"].(float64); ok && len(a) < int(n) {
			bad("fewer than %v items", n)
		}
		for i, x := range a {
			errs = append(errs, validate(root, s["items"].(schema), x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want a string, got %T", v)
		} else if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			bad("%q does not match %s", str, p)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean")
		}
	case "integer":
		i, ok := v.(int)
		if !ok {
			bad("want an integer")
		} else if m, ok := s["minimum"].(float64); ok && float64(i) < m {
			bad("below %v", m)
		}
	}
	return errs
}

// TestExamplesMatchSchema: every example validates against the JSON Schema,
// and the validator does refuse what the loader refuses.
func TestExamplesMatchSchema(t *testing.T) {
	root := loadSchema(t)
	files, _ := filepath.Glob("../../examples/profiles/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		for _, e := range validate(root, root, v, filepath.Base(f)) {
			t.Error(e)
		}
	}
	for _, bad := range []string{
		head + "colour: red\n",
		head + "brokers: [{name: b, kind: rabbit}]\n",
		head + "brokers: [{name: b, kind: nats, streams: [{name: S, duplicates: 300}]}]\n",
		head + "producers: [{name: p, broker: b, stream: S}]\n",
		"name: t\n",
	} {
		var v any
		if err := yaml.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if len(validate(root, root, v, "")) == 0 {
			t.Errorf("the schema accepts\n%s", bad)
		}
		if _, err := Parse("bad.yaml", []byte(bad)); err == nil {
			t.Errorf("the loader accepts\n%s", bad)
		}
	}
}
