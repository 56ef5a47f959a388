// Package pub leaks internal types in some exported identifiers and not in
// others, for apicheck's test.
package pub

import "github.com/onceproof/tck/internal/tools/apicheck/testdata/internal/hidden"

// Named re-exports hidden.Other: naming it is allowed.
type Named = hidden.Other

// Returns leaks hidden.Thing through its result.
func Returns() *hidden.Thing { return nil }

// Holds leaks hidden.Thing through an exported field.
type Holds struct {
	Field []hidden.Thing
	field hidden.Thing
}

// Fine names hidden.Other through the alias only.
func Fine(n Named) map[string]Named { return nil }

// private fields and unexported functions do not count.
func private() hidden.Thing { return hidden.Thing{} }

var _ = private
