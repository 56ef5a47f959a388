// Package registry is the CLI's table of targets. Each row is one kind of
// target (SUITE/NAME) and, for each mode it can be reached in (embedded,
// container, a URL), the constructor in the adapter's own package that
// starts it; the binding files (one per suite) turn what an adapter started
// into the suite's Target and the report's target.Info. No backend
// behaviour lives here: servers, containers, clusters and faults belong to
// their adapters.
package registry

import (
	"context"
	"fmt"

	"github.com/onceproof/tck/internal/target"
)

// Targets returns a registry of every known target kind.
func Targets() *target.Registry {
	r := target.NewRegistry()
	for _, table := range [][]row{eventStores(), eventStoreDrivers(), brokers(), redisBrokers(), kafkaBrokers(), kafkaCertifyRows(), redisCertifyRows(), kafkaShareBrokers(), rabbitBrokers(), consumers(), services(), apis()} {
		for _, rw := range table {
			r.Add(rw.kind())
		}
	}
	return r
}

// row is one kind of target: how it is described (everything of
// target.Kind but Modes and Start) and how each mode starts it, the first
// mode being the default.
type row struct {
	target.Kind
	modes []mode
	// note, when set, is added to the started target's notes (a mutant's
	// defect).
	note string
}

// mode maps one way of reaching a kind to its constructor.
type mode struct {
	mode  target.Mode
	start start
}

type start func(ctx context.Context, ref target.Ref) (*target.Started, error)

func (r row) kind() target.Kind {
	k := r.Kind
	k.Modes = nil
	for _, m := range r.modes {
		k.Modes = append(k.Modes, m.mode)
	}
	modes, mutant, note := r.modes, r.Mutant, r.note
	k.Start = func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		for _, m := range modes {
			if m.mode != ref.Mode() {
				continue
			}
			st, err := m.start(ctx, ref)
			if err != nil {
				return nil, err
			}
			st.Info.Mutant = st.Info.Mutant || mutant
			if note != "" {
				st.Info.Notes = append(st.Info.Notes, note)
			}
			return st, nil
		}
		return nil, fmt.Errorf("target %s cannot be reached as %s", ref.Key(), ref.Mode())
	}
	return k
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
