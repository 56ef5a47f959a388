package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	pgstore "github.com/onceproof/tck/adapters/eventstore/postgres"
	"github.com/onceproof/tck/adapters/eventstore/sqlite"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/eventstore"
)

func eventStores() []row {
	var rows []row
	for _, m := range esmutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "mutant-" + m.Name,
				Summary: "deliberately broken: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				db := m.Build.NewDB()
				return esStarted(ref, "mutant of the in-process reference", m.Build.Caps(), func(context.Context) (es.EventStore, error) { return db.Open(), nil }, nil), nil
			}}},
			note: "defect: " + m.Defect,
		})
	}
	return append(rows,
		row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "memory",
				Summary:   "the reference store: a map behind one mutex",
				Needs:     "nothing",
				Reference: true,
			},
			modes: []mode{{target.Embedded, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				db := memory.NewDB()
				return esStarted(ref, "in-process map", refCaps(), func(context.Context) (es.EventStore, error) { return db.Open(), nil }, nil), nil
			}}},
		},
		row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "memory-paced",
				Summary:   "the reference at a networked database's pace: every append holds one lock for 2-5 ms (a correct store the rules must pass however slow)",
				Needs:     "nothing",
				Reference: true,
			},
			modes: []mode{{target.Embedded, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				db := memory.NewPaced(2*time.Millisecond, 5*time.Millisecond)
				return esStarted(ref, "in-process map, appends of 2-5 ms behind one lock", refCaps(), func(context.Context) (es.EventStore, error) { return db.Open(), nil }, nil), nil
			}}},
		},
		row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "sqlite",
				Summary: "SQLite through the pure-Go driver: constraints inside one transaction",
				Needs:   "nothing (a temporary database file), or sqlite:///path/to/file.db",
				Default: true,
			},
			modes: []mode{
				{target.Embedded, sqliteStore(sqlite.OpenTemp)},
				{target.External, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
					return sqliteStore(func(ctx context.Context) (*sqlite.DB, func() error, error) { return sqlite.OpenFile(ctx, ref.Address) })(ctx, ref)
				}},
			},
		},
		row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "postgres",
				Summary: "PostgreSQL through pgx: named unique constraints, errors mapped by constraint name",
				Needs:   "a PostgreSQL URL, postgres://user:pw@host:5432/db (scripts/postgres-local.sh starts one), or Docker and the image " + containers.DefaultPostgresImage + " (TCK_POSTGRES_IMAGE; `make images` builds it) for =container; the adapter creates and uses the schema onceproof_tck only",
			},
			modes: []mode{
				{target.External, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
					// The run's material as libpq's parameters (docs/tls.md).
					m := ref.Opts.TLS
					db, err := pgstore.Open(ctx, pgstore.WithMaterial(ref.Address, m.CA, m.Cert, m.Key))
					if err != nil {
						return nil, target.Unavailable(ref, err)
					}
					return esStarted(ref, "PostgreSQL "+db.Version(), refCaps(), func(context.Context) (es.EventStore, error) { return db.Store(), nil }, db.Close), nil
				}},
				{target.Container, postgresContainer},
			},
		},
	)
}

// refCaps is what the real stores declare: the kit's own request-id
// pre-check chain in front of them.
func refCaps() es.Capabilities { return es.Capabilities{PreCheck: precheck.New} }

func sqliteStore(open func(ctx context.Context) (*sqlite.DB, func() error, error)) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		db, stop, err := open(ctx)
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		return esStarted(ref, "sqlite "+db.Version(ctx), refCaps(), func(context.Context) (es.EventStore, error) { return db.Store(), nil }, stop), nil
	}
}

// postgresContainer is eventstore/postgres=container: a fresh PostgreSQL per
// run, through the same pgx adapter as a URL. Stop also removes the
// container.
func postgresContainer(ctx context.Context, ref target.Ref) (*target.Started, error) {
	p, err := containers.StartPostgres(ctx, containers.PostgresOptions{})
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	remove := func() error { return p.Remove(context.Background()) }
	db, err := pgstore.Open(ctx, p.URL)
	if err != nil {
		_ = remove()
		return nil, target.Unavailable(ref, redact.Error(err, redact.Secrets(p.URL)...))
	}
	st := esStarted(ref, "PostgreSQL "+db.Version()+" (container)", refCaps(),
		func(context.Context) (es.EventStore, error) { return db.Store(), nil },
		func() error { return errors.Join(db.Close(), remove()) })
	st.Info.Address = target.Redact(p.URL)
	st.Info.Config["image"] = p.Spec.Image
	st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("container %s from image %s, removed when the run ends", p.Name, p.Spec.Image))
	return st, nil
}

// esStarted binds an event-store factory to the suite.
// before, when given, runs at the start of every rule (a driver's protocol
// watch).
func esStarted(ref target.Ref, version string, caps es.Capabilities, open eventstore.Factory, stop func() error, before ...spec.Body) *target.Started {
	if stop == nil {
		stop = func() error { return nil }
	}
	t := eventstore.Target{Open: open, Caps: caps, Seed: ref.Opts.Seed}
	h := kithooks.EventStore{MaxWait: ref.Opts.MaxWait}
	if len(before) > 0 {
		h.Before = before[0]
	}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(ref.Address), Version: version,
			Config: map[string]string{
				"acceptsVersionGap": boolString(caps.AcceptsVersionGap),
				"precheck":          boolString(caps.PreCheck != nil),
			},
		},
		Rules:    func() target.RuleSet { return spec.Collect(eventstore.Register, t, spec.With(h)) },
		Register: func() { eventstore.Register(t, spec.With(h)) },
		Stop:     stop,
	}
}
