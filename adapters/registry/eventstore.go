package registry

import (
	"context"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/adapters/eventstore/mutants"
	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/eventstore"
)

func addEventStores(r *target.Registry) {
	for _, m := range mutants.All {
		r.Add(target.Kind{
			Suite: "eventstore", Name: "mutant-" + m.Name,
			Summary: "deliberately broken: " + m.Defect,
			Modes:   []target.Mode{target.Embedded},
			Needs:   "nothing",
			Mutant:  true, MustFail: m.MustFail,
			Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				db := m.NewDB()
				st := esStarted(ref, "mutant of the in-process reference", m.Caps(), func(context.Context) (es.EventStore, error) { return db.Open(), nil }, nil)
				st.Info.Mutant = true
				st.Info.Notes = append(st.Info.Notes, "defect: "+m.Defect)
				return st, nil
			},
		})
	}
	r.Add(target.Kind{
		Suite: "eventstore", Name: "memory",
		Summary:   "the reference store: a map behind one mutex",
		Modes:     []target.Mode{target.Embedded},
		Needs:     "nothing",
		Reference: true,
		Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
			db := memory.NewDB()
			caps := es.Capabilities{PreCheck: precheck.New}
			return esStarted(ref, "in-process map", caps, func(context.Context) (es.EventStore, error) { return db.Open(), nil }, nil), nil
		},
	})
	r.Add(target.Kind{
		Suite: "eventstore", Name: "sqlite",
		Summary: "SQLite through the pure-Go driver: constraints inside one transaction",
		Modes:   []target.Mode{target.Embedded, target.External},
		Needs:   "nothing (a temporary database file), or sqlite:///path/to/file.db",
		Default: true,
		Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
			open := sqlite.OpenTemp
			if ref.Mode() == target.External {
				open = func(ctx context.Context) (*sqlite.DB, func() error, error) { return sqlite.OpenFile(ctx, ref.Address) }
			}
			db, stop, err := open(ctx)
			if err != nil {
				return nil, target.Unavailable(ref, err)
			}
			caps := es.Capabilities{PreCheck: precheck.New}
			return esStarted(ref, "sqlite "+db.Version(ctx), caps, func(context.Context) (es.EventStore, error) { return db.Store(), nil }, stop), nil
		},
	})
	r.Add(target.Kind{
		Suite: "eventstore", Name: "postgres",
		Summary: "PostgreSQL through pgx: named unique constraints, errors mapped by constraint name",
		Modes:   []target.Mode{target.External, target.Container},
		Needs:   "a PostgreSQL URL, postgres://user:pw@host:5432/db (scripts/postgres-local.sh starts one), or Docker and the image postgres:15 (TCK_POSTGRES_IMAGE; `make images` builds it) for =container; the adapter creates and uses the schema onceproof_tck only",
		Start: func(ctx context.Context, ref target.Ref) (*target.Started, error) {
			if ref.Mode() == target.Container {
				return postgresContainer(ctx, ref) // containers.go
			}
			db, err := pgstore.Open(ctx, ref.Address)
			if err != nil {
				return nil, target.Unavailable(ref, err)
			}
			caps := es.Capabilities{PreCheck: precheck.New}
			return esStarted(ref, "PostgreSQL "+db.Version(), caps, func(context.Context) (es.EventStore, error) { return db.Store(), nil }, db.Close), nil
		},
	})
}

// esStarted binds an event-store factory to the suite.
func esStarted(ref target.Ref, version string, caps es.Capabilities, open eventstore.Factory, stop func() error) *target.Started {
	if stop == nil {
		stop = func() error { return nil }
	}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(ref.Address), Version: version,
			Config: map[string]string{
				"acceptsVersionGap": boolString(caps.AcceptsVersionGap),
				"precheck":          boolString(caps.PreCheck != nil),
			},
		},
		Register: func() { eventstore.Register(eventstore.Target{Open: open, Caps: caps}) },
		Stop:     stop,
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
