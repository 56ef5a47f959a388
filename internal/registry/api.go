package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/mutants/apimutants"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/api"
)

// apiStartWait bounds how long a command target may take to listen (a
// `go run` compiles first).
const apiStartWait = 2 * time.Minute

func apis() []row {
	rows := []row{
		{
			Kind: target.Kind{
				Suite: "api", Name: "reference",
				Summary: "the reference HTTP service (net/http over the SQLite event store), contract reject-409: a repeated id is 409 problem+json, the original unchanged",
				Needs:   "nothing (a temporary database file)",
				Default: true, Reference: true,
			},
			modes: []mode{{target.Embedded, apiReference(apidesc.Reject409)}},
		},
		{
			Kind: target.Kind{
				Suite: "api", Name: "reference-replay",
				Summary: "the same reference service, contract replay (Idempotency-Key draft): a repeat gets the first response byte for byte, another payload 422",
				Needs:   "nothing (a temporary database file)",
				Default: true, Reference: true,
			},
			modes: []mode{{target.Embedded, apiReference(apidesc.Replay)}},
		},
		{
			Kind: target.Kind{
				Suite: "api", Name: "http",
				Summary: "any HTTP service, described by --api-desc FILE (or the profile's http section, or the kit's default description): at a URL, or a command the kit starts with {port} substituted, restarts for API-1.5 and stops after the run",
				Needs:   "api/http=http://127.0.0.1:8080, or api/http=cmd:COMMAND (e.g. cmd:python3 examples/api/python/service.py --port {port})",
			},
			modes: []mode{
				{target.External, apiURL},
				{target.Command, apiCommand},
			},
		},
	}
	for _, m := range apimutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "api", Name: "mutant-" + m.Name,
				Summary: "deliberately broken (" + string(m.Build.Contract) + "): " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, func(ctx context.Context, ref target.Ref) (*target.Started, error) {
				srv, err := m.Build.Start(ctx)
				if err != nil {
					return nil, target.Unavailable(ref, err)
				}
				return embeddedStarted(ctx, ref, srv, m.Build.Description(), "mutant of the reference service")
			}}},
			note: "defect: " + m.Defect,
		})
	}
	return rows
}

func apiReference(c apidesc.Contract) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		srv, err := reference.Start(ctx, c)
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		return embeddedStarted(ctx, ref, srv, apidesc.Default(c), "reference service (net/http, SQLite event store)")
	}
}

// embeddedStarted binds an in-process service and a second replica of it
// over its database.
func embeddedStarted(ctx context.Context, ref target.Ref, srv *reference.Server, d *apidesc.Description, version string) (*target.Started, error) {
	rep, err := srv.Replica(ctx)
	if err != nil {
		return nil, target.Unavailable(ref, errors.Join(err, srv.Stop()))
	}
	stop := func() error { return errors.Join(rep.Stop(), srv.Stop()) }
	return apiStarted(ctx, ref, srv.URL(), []string{rep.URL()}, d, version, srv.Restart, stop)
}

// APIDescription is the endpoint description of an api/http target: the
// file given with --api-desc, else the profile's http section (its
// repeatedId contract on the default endpoints), else the default
// (reject-409). A malformed file is an *apidesc.Error naming file, line and
// field.
func APIDescription(opts target.Options) (*apidesc.Description, error) {
	if opts.APIDesc != "" {
		return apidesc.Load(opts.APIDesc)
	}
	if p := opts.Profile; p != nil && p.HTTP != nil {
		c := apidesc.Reject409
		if p.HTTP.RepeatedID == profile.RepeatedReplay {
			c = apidesc.Replay
		}
		d := apidesc.Default(c)
		d.File = "the profile's http section (repeatedId " + string(p.HTTP.RepeatedID) + ") on the default endpoints"
		return d, nil
	}
	return apidesc.Default(apidesc.Reject409), nil
}

// apiURL is api/http=URL: a service the kit did not start (API-1.5 is not
// applicable: the kit cannot restart it).
func apiURL(ctx context.Context, ref target.Ref) (*target.Started, error) {
	d, err := APIDescription(ref.Opts)
	if err != nil {
		return nil, err
	}
	return apiStarted(ctx, ref, ref.Address, nil, d, "external HTTP service", nil, nil)
}

// apiCommand is api/http=cmd:COMMAND: the kit starts the command on a free
// port, waits for it to listen, restarts it (SIGKILL, same command and
// port) for API-1.5, and stops and reaps it after the run.
func apiCommand(ctx context.Context, ref target.Ref) (*target.Started, error) {
	d, err := APIDescription(ref.Opts)
	if err != nil {
		return nil, err
	}
	port, err := procs.FreePort()
	if err != nil {
		return nil, target.Unavailable(ref, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// A directory for the service's data that outlives its restarts and
	// not the run.
	// The service gets an empty folder inside the kit's marked one
	// (leftovers.MkdirTemp): the marker stays out of the service's sight.
	var root, dir string
	var untrack func()
	if err := leftovers.Create(func() error {
		d, err := leftovers.MkdirTemp("tck-api-data-*")
		if err != nil {
			return err
		}
		if err := os.Mkdir(filepath.Join(d, "data"), 0o755); err != nil {
			_ = os.RemoveAll(d)
			return err
		}
		root, dir, untrack = d, filepath.Join(d, "data"), leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		return nil
	}); err != nil {
		return nil, target.Unavailable(ref, fmt.Errorf("creating the service's data directory: %w", err))
	}
	rmDir := func() error {
		err := os.RemoveAll(root)
		if err == nil {
			untrack()
		}
		return err
	}
	// {data} in the command is the data directory: a command that takes it
	// shares its state through it, so the kit starts a second replica.
	command := strings.ReplaceAll(ref.Command(), "{data}", dir)
	shared := command != ref.Command()
	p, err := procs.Start(ctx, procs.Config{Name: "api service", Command: command, Port: port,
		Env: map[string]string{"PORT": "{port}", "TCK_DATA_DIR": dir}})
	if err != nil {
		return nil, target.Unavailable(ref, errors.Join(err, rmDir()))
	}
	procsUp := []*procs.Proc{p}
	stop := func() error {
		var errs []error
		for _, q := range procsUp {
			errs = append(errs, q.Stop(2*time.Second))
		}
		return errors.Join(append(errs, rmDir())...)
	}
	wctx, cancel := context.WithTimeout(ctx, apiStartWait)
	defer cancel()
	if err := p.WaitListening(wctx, addr); err != nil {
		return nil, target.Unavailable(ref, errors.Join(err, stop()))
	}
	var replicas []string
	if shared {
		rport, err := procs.FreePort()
		if err != nil {
			return nil, target.Unavailable(ref, errors.Join(err, stop()))
		}
		raddr := fmt.Sprintf("127.0.0.1:%d", rport)
		q, err := procs.Start(ctx, procs.Config{Name: "api service replica", Command: command, Port: rport,
			Env: map[string]string{"PORT": "{port}", "TCK_DATA_DIR": dir}})
		if err != nil {
			return nil, target.Unavailable(ref, errors.Join(err, stop()))
		}
		procsUp = append(procsUp, q)
		if err := q.WaitListening(wctx, raddr); err != nil {
			return nil, target.Unavailable(ref, errors.Join(err, stop()))
		}
		replicas = []string{"http://" + raddr}
	}
	restart := func(ctx context.Context) error {
		if err := p.Restart(ctx); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, apiStartWait)
		defer cancel()
		return p.WaitListening(wctx, addr)
	}
	st, err := apiStarted(ctx, ref, "http://"+addr, replicas, d, "a command the kit started: "+ref.Command(), restart, stop)
	if err != nil {
		return nil, err
	}
	st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("started as %q on port %d; SIGKILLed and restarted for API-1.5, API-5.1 and API-5.3; stopped and reaped after the run", p.Argv(), port))
	if shared {
		st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("a second replica over the same data directory (the command holds {data}) on %s", replicas[0]))
	} else {
		st.Info.Notes = append(st.Info.Notes, "one instance: the command holds no {data} placeholder, so the kit cannot start a replica over the same data")
	}
	return st, nil
}

// apiStarted probes the service (it answers; a resource just created reads
// back) and binds it to the suite. On a failed probe stop is called.
func apiStarted(ctx context.Context, ref target.Ref, url string, replicas []string, d *apidesc.Description, version string, restart func(context.Context) error, stop func() error) (*target.Started, error) {
	if stop == nil {
		stop = func() error { return nil }
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tlsCfg, err := ref.Opts.TLS.Config()
	if err != nil {
		return nil, target.Unavailable(ref, errors.Join(err, stop()))
	}
	if err := api.ProbeTLS(pctx, url, d, tlsCfg); err != nil {
		return nil, target.Unavailable(ref, errors.Join(err, stop()))
	}
	cfg := d.Config()
	cfg["restartable"] = boolString(restart != nil)
	cfg["replicas"] = fmt.Sprint(1 + len(replicas))
	t := api.Target{URL: url, Replicas: replicas, Desc: d, Restart: restart, Seed: ref.Opts.Seed, Horizon: ref.Opts.MaxWait, TLS: tlsCfg}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(url), Version: version, Config: cfg,
		},
		Rules:    func() target.RuleSet { return spec.Collect(api.Register, t) },
		Register: func() { api.Register(t) },
		Stop:     stop,
	}, nil
}
