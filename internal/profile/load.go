package profile

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is a malformed profile: one line naming the file, line and field.
type Error struct {
	File  string
	Line  int
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

// Load reads and validates a profile file.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: "cannot read the profile: " + err.Error()}
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse decodes and validates a profile; name is used in errors only.
func Parse(name string, data []byte) (*Profile, error) {
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
		return nil, &Error{File: name, Line: 1, Msg: "empty profile"}
	}
	p := &Profile{file: name, pos: map[string]int{}}
	d := decoder{file: name, pos: p.pos}
	if err := d.decode(doc.Content[0], reflect.ValueOf(p).Elem(), ""); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// decoder maps YAML nodes onto the model by its yaml tags, strictly: an
// unknown field, a wrong type or a value outside an enum is an error at its
// line. It records every field's line for the checks that follow.
type decoder struct {
	file string
	pos  map[string]int
}

func (d decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: d.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)}
}

var durationType = reflect.TypeFor[Duration]()

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
	switch {
	case t == durationType:
		return d.duration(n, v, path)
	case t.Kind() == reflect.Pointer:
		nv := reflect.New(t.Elem())
		if err := d.decode(n, nv.Elem(), path); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case t.Kind() == reflect.Struct:
		return d.mapping(n, v, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "want a list, got %s", describe(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return d.errf(n, path, "want a string, got %s", describe(n))
		}
		if allowed, ok := enums[t]; ok && !contains(allowed, n.Value) {
			return d.errf(n, path, "%q is not one of %s", n.Value, strings.Join(allowed, ", "))
		}
		v.SetString(n.Value)
		return nil
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errf(n, path, "want true or false, got %s", describe(n))
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
		return nil
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return d.errf(n, path, "want a whole number, got %s", describe(n))
		}
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			return d.errf(n, path, "want a whole number, got %q", n.Value)
		}
		v.SetInt(int64(i))
		return nil
	}
	return d.errf(n, path, "the kit cannot decode a %s (a bug)", t)
}

func (d decoder) duration(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		// A bare 300 could mean seconds or nanoseconds: refuse to guess.
		return d.errf(n, path, "want a duration with its unit such as 5m, 30s or 1h30m, got %s", describe(n))
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		return d.errf(n, path, "want a duration with its unit such as 5m, 30s or 1h30m, got %q", n.Value)
	}
	if dur < 0 {
		return d.errf(n, path, "a duration must not be negative, got %s", n.Value)
	}
	v.SetInt(int64(dur))
	return nil
}

func (d decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping of fields, got %s", describe(n))
	}
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			return d.errf(k, fp, "unknown field (fields here: %s)", strings.Join(fieldNames(v.Type()), ", "))
		}
		if seen[k.Value] {
			return d.errf(k, fp, "given twice")
		}
		seen[k.Value] = true
		d.pos[fp] = k.Line
		if err := d.decode(val, v.FieldByIndex(f.index), fp); err != nil {
			return err
		}
	}
	for _, name := range fieldNames(v.Type()) {
		if fields[name].required && !seen[name] {
			return d.errf(n, join(path, name), "required field missing")
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

// fieldsOf maps yaml names to struct fields; `profile:"required"` marks the
// fields a profile must give.
func fieldsOf(t reflect.Type) map[string]field {
	out := map[string]field{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out[name] = field{index: f.Index, required: f.Tag.Get("profile") == "required"}
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

// enums lists the values each enum type takes; the schema test keeps the
// JSON Schema's enums equal to these.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[Scope]():      {string(ScopeAggregate), string(ScopeGlobal), string(ScopeNone)},
	reflect.TypeFor[Repeated]():   {string(RepeatedConflict), string(RepeatedReplay)},
	reflect.TypeFor[BrokerKind](): {string(KindNATS), string(KindRedis), string(KindKafka)},
	reflect.TypeFor[Retention]():  {string(RetentionLimits), string(RetentionWorkQueue), string(RetentionInterest)},
	reflect.TypeFor[Storage]():    {string(StorageFile), string(StorageMemory)},
	reflect.TypeFor[AckPolicy]():  {string(AckExplicit), string(AckAll), string(AckNone)},
	reflect.TypeFor[Effect]():     {string(EffectVersionedUpsert), string(EffectUpsert), string(EffectNotIdempotent)},
	reflect.TypeFor[KeyPart]():    {string(KeyMessageID), string(KeyVersion), string(KeyEventID), string(KeyScope)},
	reflect.TypeFor[Store]():      {string(StoreDurable), string(StoreMemory)},
	reflect.TypeFor[AckOrder]():   {string(EffectThenAck), string(AckThenEffect)},
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// validate checks what a field-by-field decode cannot: the schema version,
// references between sections, and settings the broker itself would refuse.
func (p *Profile) validate() error {
	bad := func(path, format string, args ...any) error {
		return &Error{File: p.file, Line: p.Line(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	}
	if p.Schema != SchemaVersion {
		return bad("schema", "%q is not %q (the format this kit reads)", p.Schema, SchemaVersion)
	}
	names := map[string]string{}
	unique := func(kind, name, path string) error {
		key := kind + "\x00" + name
		if prev, dup := names[key]; dup {
			return bad(path, "%s %q is declared twice (first at %s)", kind, name, prev)
		}
		names[key] = path
		return nil
	}
	for i, b := range p.Brokers {
		bp := fmt.Sprintf("brokers[%d]", i)
		if err := unique("broker", b.Name, bp+".name"); err != nil {
			return err
		}
		for j, s := range b.Streams {
			sp := fmt.Sprintf("%s.streams[%d]", bp, j)
			if err := unique("stream of "+b.Name, s.Name, sp+".name"); err != nil {
				return err
			}
			if b.Kind != KindNATS {
				if s.Duplicates != 0 {
					return bad(sp+".duplicates", "a %s stream has no producer de-dupe window; leave duplicates out", b.Kind)
				}
				if s.DuplicatesRefreshOnHit {
					return bad(sp+".duplicatesRefreshOnHit", "a %s stream has no producer de-dupe window", b.Kind)
				}
			}
			if s.Replicas < 0 {
				return bad(sp+".replicas", "must not be negative")
			}
			for k, c := range s.Consumers {
				cp := fmt.Sprintf("%s.consumers[%d]", sp, k)
				if err := unique("consumer of "+b.Name+"/"+s.Name, c.Name, cp+".name"); err != nil {
					return err
				}
				if b.Kind != KindNATS && len(c.Backoff) > 0 {
					return bad(cp+".backoff", "a back-off list is a NATS consumer setting, not %s", b.Kind)
				}
				if c.MaxDeliver < -1 {
					return bad(cp+".maxDeliver", "%d: use a positive number, or 0 or -1 for unlimited", c.MaxDeliver)
				}
				// The NATS server refuses this consumer; so do we.
				if c.MaxDeliver > 0 && len(c.Backoff) > c.MaxDeliver {
					return bad(cp+".backoff", "%d back-off entries but maxDeliver %d (NATS refuses a back-off list longer than maxDeliver)", len(c.Backoff), c.MaxDeliver)
				}
			}
		}
	}
	for i, pr := range p.Producers {
		pp := fmt.Sprintf("producers[%d]", i)
		if err := unique("producer", pr.Name, pp+".name"); err != nil {
			return err
		}
		if err := p.checkRef(pp, pr.Broker, pr.Stream, ""); err != nil {
			return err
		}
		for k, r := range pr.Retries {
			if r == 0 || (k > 0 && r <= pr.Retries[k-1]) {
				return bad(fmt.Sprintf("%s.retries[%d]", pp, k), "retry times are after the first attempt and ascending: %s", r)
			}
		}
		if pr.Outbox && !pr.AfterCommit {
			return bad(pp+".outbox", "an outbox feeds events a database transaction committed: set afterCommit: true too")
		}
	}
	for i, c := range p.Consumers {
		cp := fmt.Sprintf("consumers[%d]", i)
		if err := unique("consumer", c.Name, cp+".name"); err != nil {
			return err
		}
		if err := p.checkRef(cp, c.Broker, c.Stream, c.BrokerConsumer); err != nil {
			return err
		}
		if len(c.Scopes) == 0 {
			return bad(cp+".scopes", "a consumer has at least one side-effect scope")
		}
		seen := map[string]bool{}
		for k, s := range c.Scopes {
			if seen[s.Name] {
				return bad(fmt.Sprintf("%s.scopes[%d].name", cp, k), "scope %q is declared twice", s.Name)
			}
			seen[s.Name] = true
		}
		if c.Dedupe != nil {
			if len(c.Dedupe.Key) == 0 {
				return bad(cp+".dedupe.key", "a de-dupe key has at least one part")
			}
			parts := map[KeyPart]bool{}
			for k, part := range c.Dedupe.Key {
				if parts[part] {
					return bad(fmt.Sprintf("%s.dedupe.key[%d]", cp, k), "%s is given twice", part)
				}
				parts[part] = true
			}
		}
	}
	return nil
}

// checkRef checks that a broker, stream and (if named) broker consumer exist.
func (p *Profile) checkRef(path, broker, stream, consumer string) error {
	b, s := p.stream(broker, stream)
	switch {
	case b == nil:
		return &Error{File: p.file, Line: p.Line(path + ".broker"), Field: path + ".broker", Msg: fmt.Sprintf("no broker named %q under brokers", broker)}
	case s == nil:
		return &Error{File: p.file, Line: p.Line(path + ".stream"), Field: path + ".stream", Msg: fmt.Sprintf("broker %q has no stream named %q", broker, stream)}
	case consumer != "" && s.consumer(consumer) == nil:
		return &Error{File: p.file, Line: p.Line(path + ".brokerConsumer"), Field: path + ".brokerConsumer", Msg: fmt.Sprintf("stream %s/%s has no consumer named %q", broker, stream, consumer)}
	}
	return nil
}

// IsMalformed reports whether err is a malformed profile (exit 3).
func IsMalformed(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
