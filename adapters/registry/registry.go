// Package registry wires every adapter the kit ships (real, reference and
// mutant) into one target.Registry. Each suite has its own file here; the CLI
// and the self-test read this list and nothing else.
package registry

import "github.com/onceproof/tck/internal/target"

// Targets returns a registry of every known target kind.
func Targets() *target.Registry {
	r := target.NewRegistry()
	addEventStores(r)
	for _, add := range extra {
		add(r)
	}
	return r
}

// extra holds the other suites' wiring (broker.go, consumer.go), so that each
// suite's file adds itself without editing this one.
var extra []func(*target.Registry)
