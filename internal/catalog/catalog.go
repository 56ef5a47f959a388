// Package catalog holds every rule the kit checks: its stable id, level, kind,
// title, the contract sentence it enforces and where that sentence comes from,
// and the capabilities a target needs for the rule to apply.
//
// Rules enter the catalog through one path, Add, which validates the metadata
// (the Kubernetes-conformance idea: one wrapper, a reviewed list). The list is
// rendered to docs/RULES.md, and a test keeps the two equal.
package catalog

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Level is the RFC 2119 strength of a rule.
type Level string

const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
	May    Level = "MAY"
)

// Kind says how a verdict is reached.
type Kind string

const (
	// Requirement: the target either satisfies the rule or fails it.
	Requirement Kind = "requirement"
	// Characterization: the rule measures a property (a window, a policy)
	// and fails only where the measurement contradicts the declaration.
	Characterization Kind = "characterization"
)

// Capability names something a target may or may not have. A rule needing a
// capability the target lacks is not-applicable, with the capability named.
type Capability string

// Rule is one entry of the catalog.
type Rule struct {
	ID       string       `json:"id"`
	Suite    string       `json:"suite"`
	Level    Level        `json:"level"`
	Kind     Kind         `json:"kind"`
	Title    string       `json:"title"`
	Contract string       `json:"contract"` // the sentence of the contract, quoted or paraphrased
	Source   string       `json:"source"`   // document and section (or broker doc) it comes from
	Needs    []Capability `json:"needs,omitempty"`
}

var (
	mu    sync.RWMutex
	rules = map[string]Rule{}
	idRe  = regexp.MustCompile(`^(ES|BR|CO|API)-[1-9][0-9]?\.[1-9][0-9]?$`)
)

var suiteOfPrefix = map[string]string{"ES": "eventstore", "BR": "broker", "CO": "consumer", "API": "api"}

// Add registers rules; it panics on invalid or duplicate metadata, because a
// broken catalog is a programming error caught by the first test run.
func Add(rs ...Rule) {
	mu.Lock()
	defer mu.Unlock()
	for _, r := range rs {
		if err := validate(r); err != nil {
			panic("catalog: " + err.Error())
		}
		if _, dup := rules[r.ID]; dup {
			panic("catalog: duplicate rule " + r.ID)
		}
		rules[r.ID] = r
	}
}

func validate(r Rule) error {
	if !idRe.MatchString(r.ID) {
		return fmt.Errorf("rule id %q does not look like ES-1.2", r.ID)
	}
	if want := suiteOfPrefix[r.ID[:strings.IndexByte(r.ID, '-')]]; r.Suite != want {
		return fmt.Errorf("rule %s: suite %q, want %q", r.ID, r.Suite, want)
	}
	switch r.Level {
	case Must, Should, May:
	default:
		return fmt.Errorf("rule %s: level %q", r.ID, r.Level)
	}
	switch r.Kind {
	case Requirement, Characterization:
	default:
		return fmt.Errorf("rule %s: kind %q", r.ID, r.Kind)
	}
	if strings.TrimSpace(r.Title) == "" || strings.TrimSpace(r.Contract) == "" || strings.TrimSpace(r.Source) == "" {
		return fmt.Errorf("rule %s: title, contract and source are required", r.ID)
	}
	return nil
}

// Lookup returns the rule with this id.
func Lookup(id string) (Rule, bool) {
	mu.RLock()
	defer mu.RUnlock()
	r, ok := rules[id]
	return r, ok
}

// MustLookup is Lookup for ids written in code.
func MustLookup(id string) Rule {
	r, ok := Lookup(id)
	if !ok {
		panic("catalog: unknown rule " + id)
	}
	return r
}

// Suites lists the suite names in run order.
func Suites() []string { return []string{"eventstore", "broker", "consumer", "api"} }

// All returns the rules of the given suite ("" for every suite) in id order.
func All(suite string) []Rule {
	mu.RLock()
	defer mu.RUnlock()
	var out []Rule
	for _, r := range rules {
		if suite == "" || r.Suite == suite {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return Less(out[i].ID, out[j].ID) })
	return out
}

// Less orders rule ids naturally: suite order, then ES-1.2 before ES-1.10.
func Less(a, b string) bool {
	ka, kb := sortKey(a), sortKey(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return a < b
}

func sortKey(id string) [3]int {
	var k [3]int
	switch {
	case strings.HasPrefix(id, "ES"):
		k[0] = 0
	case strings.HasPrefix(id, "BR"):
		k[0] = 1
	case strings.HasPrefix(id, "API"):
		k[0] = 3
	default:
		k[0] = 2
	}
	if i := strings.IndexByte(id, '-'); i >= 0 {
		parts := strings.SplitN(id[i+1:], ".", 2)
		if len(parts) == 2 {
			k[1], _ = strconv.Atoi(parts[0])
			k[2], _ = strconv.Atoi(parts[1])
		}
	}
	return k
}
