package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/esdriver"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
)

// The commands of the kit's own driver adapters, relative to the module
// root.
const (
	pythonAdapter = "python3 examples/eventstore-driver/python/adapter.py"
	// Serial GC and C1 only: a JVM with fewer threads of its own races
	// two to three times faster on a loaded two-core machine.
	javaAdapter = "java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp /usr/share/java/postgresql.jar examples/eventstore-driver/java/Adapter.java"
)

// JavaPostgresEnv names the PostgreSQL URL the Java reference adapter
// writes to.
const JavaPostgresEnv = "TCK_POSTGRES_URL"

// eventStoreDrivers are the eventstore rows reached through the driver
// protocol (docs/eventstore-driver.md): any adapter by command, the Python
// and Java references by name, and the mutant adapters.
func eventStoreDrivers() []row {
	rows := []row{
		{
			Kind: target.Kind{
				Suite: "eventstore", Name: "process",
				Summary: "an event store in any language behind a driver adapter (JSON lines on stdin/stdout, docs/eventstore-driver.md) the kit starts as cmd:COMMAND, two processes over one data directory, restarted when one dies, reaped after the run",
				Needs:   "the adapter's command, e.g. eventstore/process=cmd:python3 examples/eventstore-driver/python/adapter.py ({data} and $TCK_DATA_DIR: a directory shared by its processes)",
			},
			modes: []mode{{target.Command, driverStarted("", "")}},
		},
		{
			Kind: target.Kind{
				Suite: "eventstore", Name: "process-python",
				Summary:   "the reference driver adapter in Python (standard library, sqlite3) as two processes over one database file",
				Needs:     "python3",
				Reference: true,
			},
			modes: []mode{{target.Embedded, driverStarted(pythonAdapter, "")}},
		},
		{
			Kind: target.Kind{
				Suite: "eventstore", Name: "process-java",
				Summary: "the reference driver adapter in Java (JDK 17, JDBC) over PostgreSQL, two processes over one database",
				Needs:   "java (default-jdk-headless), /usr/share/java/postgresql.jar (libpostgresql-jdbc-java) and " + JavaPostgresEnv,
			},
			modes: []mode{{target.Embedded, driverStarted(javaAdapter, JavaPostgresEnv)}},
		},
	}
	for _, m := range esmutants.Drivers() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "eventstore", Name: "mutant-" + m.Name,
				Summary: "deliberately broken driver adapter: " + m.Defect,
				Needs:   "python3",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, driverStarted(m.Command, "")}},
			note:  "defect: " + m.Defect,
		})
	}
	return rows
}

// driverStarted starts the adapter given by the ref's command (or fixed,
// relative to the module root) and binds it to the suite. needEnv, when
// set, is a variable the fixed adapter cannot run without.
func driverStarted(fixed, needEnv string) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		line, dir := ref.Command(), ""
		if fixed != "" {
			root, err := moduleRoot()
			if err != nil {
				return nil, target.Unavailable(ref, err)
			}
			line, dir = fixed, root
		}
		if needEnv != "" && os.Getenv(needEnv) == "" {
			return nil, target.Unavailable(ref, fmt.Errorf("%s is unset: the adapter needs a database (scripts/postgres-local.sh starts one)", needEnv))
		}
		root, rmData, err := kitDir("tck-esdriver-")
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		// The adapter gets an empty folder inside the kit's marked one:
		// the marker (leftovers.TempMarker) stays out of its sight.
		data := filepath.Join(root, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			return nil, target.Unavailable(ref, errors.Join(err, rmData()))
		}
		argv, err := procs.Split(line)
		if err != nil || len(argv) == 0 {
			_ = rmData()
			return nil, target.Unavailable(ref, fmt.Errorf("the command %q cannot be split: %v", line, err))
		}
		for i := range argv { // after the split: a TMPDIR with a space stays one word
			argv[i] = strings.ReplaceAll(argv[i], "{data}", data)
		}
		args, built, err := procs.BuildGoRun(ctx, argv, data, dir)
		if err != nil {
			_ = rmData()
			return nil, target.Unavailable(ref, err)
		}
		if !built {
			if _, err := lookPath(argv[0], dir); err != nil {
				_ = rmData()
				return nil, target.Unavailable(ref, err)
			}
		}
		env := map[string]string{"TCK_DATA_DIR": data}
		if fixed != "" {
			env["PYTHONDONTWRITEBYTECODE"] = "1" // the kit's own adapters write nothing into the source tree
		}
		drv, err := esdriver.Start(ctx, esdriver.Config{Name: "adapter", Args: args, Dir: dir, Env: env})
		if err != nil {
			_ = rmData()
			return nil, target.Unavailable(ref, err)
		}
		h := drv.Hello()
		caps := es.Capabilities{AcceptsVersionGap: h.Capabilities.AcceptsVersionGap, PreCheck: refCaps().PreCheck}
		stop := func() error { return errors.Join(drv.Stop(), rmData()) }
		st := esStarted(ref, fmt.Sprintf("%s (driver protocol %d)", orUnnamed(h.Store), h.Protocol), caps,
			func(ctx context.Context) (es.EventStore, error) { return drv.Open(ctx) }, stop, protocolProblemsAreUnknown(drv))
		st.Info.Address = target.Redact(line)
		st.Info.Config["command"] = target.Redact(line)
		st.Info.Config["driver"] = fmt.Sprintf("JSON lines on stdin/stdout, protocol %d, requests in flight at once", esdriver.Version)
		st.Info.Config["processes"] = fmt.Sprint(drv.Processes())
		if built {
			st.Info.Notes = append(st.Info.Notes, "built once with go build, the binary run at every start")
		}
		if drv.Processes() > 1 {
			st.Info.Notes = append(st.Info.Notes, fmt.Sprintf("%d adapter processes over one data directory (the adapter says sharedData): a rule's handles alternate between them, as service instances over one database", drv.Processes()))
		} else {
			st.Info.Notes = append(st.Info.Notes, "one adapter process: it does not say sharedData, so the kit cannot start a second instance over the same data; the rule's handles are on that process")
		}
		st.Info.Notes = append(st.Info.Notes, "an adapter that dies is restarted at the next handle opened; a protocol error (a line that is not a reply, an exit mid-rule, a reply that never came) makes the rule running then unknown, with the adapter's last output")
		return st, nil
	}
}

func orUnnamed(s string) string {
	if s == "" {
		return "an adapter that did not name its store"
	}
	return s
}

// protocolProblemsAreUnknown is the start of every rule against a driver
// adapter: a failure during which the adapter broke the protocol may be
// the kit's lost reply, not the store's behaviour, so it is unknown (the
// rules run at once, so a problem in another rule's call counts too: doubt
// errs towards unknown). The problems, with the adapter's last output, go
// to the evidence.
func protocolProblemsAreUnknown(drv *esdriver.Driver) spec.Body {
	return func(r *spec.R) {
		mark := drv.Problems()
		r.Excuse(func(string) string {
			problems := drv.ProblemsSince(mark)
			if len(problems) == 0 {
				return ""
			}
			first, _, _ := strings.Cut(problems[0], "; its last output:")
			reason := fmt.Sprintf("the adapter broke the driver protocol during the rule: %s (its last output is in the evidence)", first)
			if len(problems) > 1 {
				reason += fmt.Sprintf(", and %d more problems", len(problems)-1)
			}
			return reason
		})
		r.DeferCleanup(func() {
			for _, p := range drv.ProblemsSince(mark) {
				r.Ev.Notef("driver protocol error: %s", p)
			}
		})
	}
}
