// Package mutants holds the one shape of a deliberately broken target. Each
// sub-package (esmutants, apimutants, comutants, natsmutants, redismutants,
// kafkamutants) lists its own with All, and the registry turns each into a
// target the self-test runs and expects to fail the rules it names.
package mutants

// Mutant is one broken target. B is what the registry builds it from: a
// broker client, a consumer design, a service or a store of the package's
// own kind.
type Mutant[B any] struct {
	Name     string
	Defect   string   // what is broken, in one line
	MustFail []string // rule ids the self-test asserts it fails
	Build    B
}
