// Package apidesc is the endpoint description of an HTTP service the api
// suite checks as a black box: how to create a resource and where its
// stable id goes (a header such as Idempotency-Key, a body field, the path),
// how to read it back by that id (the authoritative query), optionally how
// to list every resource carrying the id, where a tenant or user scope goes,
// and the declared contract for a repeated id (reject-409 or replay) with
// the status codes the service promises.
//
// A description is a small YAML (or JSON) file, `tck run --api-desc FILE`;
// Load reports a malformed one in one line naming the file, line and field.
// Default is the description of the kit's reference service and of the
// examples in examples/api.
package apidesc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/tlsmat"
)

// Contract is what a service answers to a repeated id.
type Contract string

const (
	// Reject409: a repeat is refused with 409 and the original is unchanged
	// (seed 002 §七).
	Reject409 Contract = "reject-409"
	// Replay: a repeat gets the first response again; another payload under
	// the same key is 422, a key still in flight 409 (the IETF HTTPAPI
	// Idempotency-Key draft).
	Replay Contract = "replay"
)

// Where a stable id or a scope goes in a request.
const (
	InHeader = "header"
	InBody   = "body"
	InPath   = "path"
	InQuery  = "query"
)

// Description is one service's endpoint description.
type Description struct {
	Contract Contract `yaml:"contract" json:"contract" apidesc:"required"`
	Create   Create   `yaml:"create" json:"create" apidesc:"required"`
	Read     Read     `yaml:"read" json:"read" apidesc:"required"`
	// List, when given, returns every resource carrying the id, so the kit
	// counts them instead of inferring "one" from the read.
	List    *List   `yaml:"list" json:"list,omitempty"`
	Answers Answers `yaml:"answers" json:"answers"`
	// Scope, when given, is where a tenant or user goes: the same id under
	// another scope is another request.
	Scope  *Place `yaml:"scope" json:"scope,omitempty"`
	Errors Errors `yaml:"errors" json:"errors"`
	// Retention is how long after its creation the service promises to
	// recognise a key as a repeat (a Go duration such as 24h, or days:
	// 7d). The kit checks repeats up to the lesser of it and its horizon
	// (API-5.2). Left out: the service promises it for ever.
	Retention string `yaml:"retention" json:"retention,omitempty"`
	// TLS is the trust material for an https service, paths relative to
	// the description; tck run's --tls-* flags win (docs/tls.md).
	TLS *tlsmat.Files `yaml:"tls" json:"tls,omitempty"`

	// File is where the description was loaded from ("" for Default).
	File string `yaml:"-" json:"file,omitempty"`
}

// Material is the description's trust material (its tls section, paths
// from the description's folder); empty without one.
func (d *Description) Material() tlsmat.Material {
	if d == nil || d.TLS == nil {
		return tlsmat.Material{}
	}
	return d.TLS.Material(d.File)
}

// Create is the request that creates a resource.
type Create struct {
	Method string `yaml:"method" json:"method"` // default POST
	Path   string `yaml:"path" json:"path" apidesc:"required"`
	ID     Place  `yaml:"id" json:"id" apidesc:"required"`
	// Body is the payload (a JSON object); the kit sets the id field into
	// it when ID.In is body.
	Body map[string]any `yaml:"body" json:"body" apidesc:"required"`
	// Vary names a body field the kit changes to make "another payload",
	// and sets uniquely per request so payloads of different rules differ.
	Vary string `yaml:"vary" json:"vary" apidesc:"required"`
	// Created are the statuses of a creation (default 200, 201).
	Created []int `yaml:"created" json:"created"`
}

// Place is where a value goes: in (header, body, path, query) and its name
// (header name, body field, query parameter; for path the placeholder is
// {id} or {scope} in the path).
type Place struct {
	In   string `yaml:"in" json:"in" apidesc:"required"`
	Name string `yaml:"name" json:"name"`
}

// Read is the authoritative query by the stable id.
type Read struct {
	Path    string `yaml:"path" json:"path" apidesc:"required"` // holds {id}
	Found   []int  `yaml:"found" json:"found"`                  // default 200
	Missing []int  `yaml:"missing" json:"missing"`              // default 404
}

// List returns the resources carrying one id.
type List struct {
	Path string `yaml:"path" json:"path" apidesc:"required"` // holds {id}
	// Items names the member holding the array ("": the body is the array).
	Items string `yaml:"items" json:"items,omitempty"`
}

// Answers are the statuses the service promises for repeats.
type Answers struct {
	// Repeat: the same id and payload again (reject-409; default 409).
	// Under replay a repeat is the first response, not a status list.
	Repeat []int `yaml:"repeat" json:"repeat,omitempty"`
	// Mismatch: the same id with another payload (default 409 for
	// reject-409, 422 for replay).
	Mismatch []int `yaml:"mismatch" json:"mismatch"`
	// InFlight: the same id while the first is still being processed
	// (replay; default 409).
	InFlight []int `yaml:"inFlight" json:"inFlight,omitempty"`
}

// Errors says which members of a refusal carry the identifiers (optional:
// without them any member whose value is the id counts).
type Errors struct {
	IDField    string `yaml:"idField" json:"idField,omitempty"`
	ScopeField string `yaml:"scopeField" json:"scopeField,omitempty"`
	// Fields are further members every refusal must hold, with any
	// non-empty value (seed 000's CommandResult: stage, errorCode,
	// aggregateId, commandId).
	Fields []string `yaml:"fields" json:"fields,omitempty"`
}

// Default is the description the kit's reference service and the examples
// in examples/api implement, under the given contract.
func Default(c Contract) *Description {
	d := &Description{
		Contract: c,
		Create: Create{
			Method: "POST", Path: "/orders",
			ID:   Place{In: InHeader, Name: "Idempotency-Key"},
			Body: map[string]any{"item": "book", "qty": 1},
			Vary: "qty",
		},
		Read:      Read{Path: "/orders/{id}"},
		List:      &List{Path: "/orders?requestId={id}"},
		Scope:     &Place{In: InHeader, Name: "X-Tenant"},
		Errors:    Errors{IDField: "requestId", ScopeField: "tenant"},
		Retention: "24h",
	}
	d.fill()
	return d
}

// RetentionFor is the declared key retention; ok is false when none is
// declared (for ever).
func (d *Description) RetentionFor() (ret time.Duration, ok bool) {
	ret, err := parseRetention(d.Retention)
	return ret, err == nil && ret > 0
}

// parseRetention reads a Go duration or a number of days ("7d").
func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%q is not a positive duration", s)
	}
	return d, err
}

// fill sets the defaults of the fields left out.
func (d *Description) fill() {
	if d.Create.Method == "" {
		d.Create.Method = "POST"
	}
	d.Create.Method = strings.ToUpper(d.Create.Method)
	if len(d.Create.Created) == 0 {
		d.Create.Created = []int{200, 201}
	}
	if len(d.Read.Found) == 0 {
		d.Read.Found = []int{200}
	}
	if len(d.Read.Missing) == 0 {
		d.Read.Missing = []int{404}
	}
	switch d.Contract {
	case Reject409:
		if len(d.Answers.Repeat) == 0 {
			d.Answers.Repeat = []int{409}
		}
		if len(d.Answers.Mismatch) == 0 {
			d.Answers.Mismatch = []int{409}
		}
	case Replay:
		if len(d.Answers.Mismatch) == 0 {
			d.Answers.Mismatch = []int{422}
		}
		if len(d.Answers.InFlight) == 0 {
			d.Answers.InFlight = []int{409}
		}
	}
}

// Name is how reports name the description.
func (d *Description) Name() string {
	if d.File == "" {
		return "the kit's default description"
	}
	return d.File
}

// Summary is the description in one line, for the report's target config.
func (d *Description) Summary() string {
	s := fmt.Sprintf("%s %s, id in %s %s; read %s", d.Create.Method, d.Create.Path, d.ID().In, d.ID().Name, d.Read.Path)
	if d.List != nil {
		s += "; list " + d.List.Path
	}
	if d.Scope != nil {
		s += fmt.Sprintf("; scope in %s %s", d.Scope.In, d.Scope.Name)
	}
	return s
}

// ID is where the stable id goes.
func (d *Description) ID() Place { return d.Create.ID }

// IsCreated reports whether status is a declared creation.
func (d *Description) IsCreated(status int) bool { return slices.Contains(d.Create.Created, status) }

// Config is the declaration as the report's target config.
func (d *Description) Config() map[string]string {
	ints := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	c := map[string]string{
		"contract":    string(d.Contract),
		"description": d.Name(),
		"endpoints":   d.Summary(),
		"created":     ints(d.Create.Created),
		"mismatch":    ints(d.Answers.Mismatch),
	}
	if d.Contract == Reject409 {
		c["repeat"] = ints(d.Answers.Repeat)
	} else {
		c["repeat"] = "the first response replayed"
		c["inFlight"] = ints(d.Answers.InFlight)
	}
	if d.Retention != "" {
		c["retention"] = d.Retention
	}
	return c
}

// BodyJSON is the create body as JSON with the vary field set to vary and,
// when the id goes in the body, the id field set to id.
func (d *Description) BodyJSON(id string, vary any) []byte {
	m := make(map[string]any, len(d.Create.Body)+2)
	maps.Copy(m, d.Create.Body)
	m[d.Create.Vary] = vary
	return d.Payload(id, m)
}

// Payload is the create body holding fields and, when the id goes in the
// body, the id field set to id.
func (d *Description) Payload(id string, fields map[string]any) []byte {
	m := make(map[string]any, len(fields)+1)
	maps.Copy(m, fields)
	if d.ID().In == InBody {
		m[d.ID().Name] = id
	}
	b, _ := json.Marshal(m) // a map decoded from YAML or JSON always encodes
	return b
}
