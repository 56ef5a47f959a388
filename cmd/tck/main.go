// Command tck is the onceproof conformance kit: it runs the event-store,
// broker and consumer suites against targets and writes a conformance report.
//
//	tck list      [--suite S] [--format text|json|markdown]
//	tck targets   [--suite S] [--mutants] [--format text|json]
//	tck plan      [--suite S]... [--target T]... [--rule ID]...
//	tck plan      --profile FILE [--format text|json] [--out DIR]
//	tck run       [--suite S]... [--target T]... [--rule ID]... [--out DIR] [--quiet]
//	tck selftest  [--suite S]... [--out DIR]
//	tck report    --in DIR
//	tck report    diff [--format text|json] OLD NEW
//	tck clean     [--all]
//	tck version   (also tck --version, tck -v)
//
// Exit codes: 0 conformant, 1 a MUST rule failed, 2 inconclusive,
// 3 usage or configuration error, 4 a target could not be started or reached,
// 5 the run ran but its report could not be written.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	streamlogs "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
	goredis "github.com/redis/go-redis/v9"

	"github.com/onceproof/tck/internal/containers"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/safetext"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/target"
)

// Version is the kit's version. `make build` sets it to the commit with
// -ldflags "-X main.Version=..."; otherwise it comes from the build info
// (the module version for `go install ...@vX`, else the VCS revision).
var Version = ""

func kitVersion() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev == "":
		return "devel"
	case dirty:
		return "devel+" + rev + "-dirty"
	}
	return "devel+" + rev
}

// usageError is a bad command line or configuration: exit 3, one line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a decided exit code (the run's verdict); msg, when
// set, is the one line printed with it.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

var commands = map[string]struct {
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	summary string
}{
	"list":     {cmdList, "print the rule catalog"},
	"targets":  {cmdTargets, "list the targets the kit can start or reach"},
	"plan":     {cmdPlan, "show what a run would check, or a profile's hazards (--profile FILE), without running anything"},
	"run":      {cmdRun, "run suites against targets and write a report"},
	"selftest": {cmdSelftest, "run every deliberately broken target and print the kill matrix"},
	"report":   {cmdReport, "re-render report.md, report.html and junit.xml from a results.json; report diff OLD NEW compares two"},
	"clean":    {cmdClean, "remove what a killed run left behind: temporary folders, report-folder locks, containers"},
	"version":  {cmdVersion, "print the kit's version"},
}

func main() {
	defer func() {
		// A bug of the kit's own: remove what it created, then report it.
		if p := recover(); p != nil {
			_ = leftovers.RemoveAll()
			panic(p)
		}
	}()
	// The CLI owns its process, so it alone handles signals: it cancels the
	// run, and the leftovers watcher removes what the kit created.
	leftovers.HandleSignals()
	containers.Quiet()
	// go-redis logs dial failures on its own, process-wide; the CLI reports
	// every error through its return, on one line.
	goredis.SetLogger(quiet{})
	// So does RabbitMQ's stream client, through the standard logger (a
	// connection the kit closed under it: "use of closed network
	// connection"), onto the user's terminal.
	streamlogs.SetLogger(quiet{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	// os.Exit skips defers: remove what the run created (temporary folders,
	// child servers, containers) explicitly, on every path that gets here.
	if err := leftovers.RemoveAll(); err != nil {
		fmt.Fprintln(os.Stderr, "onceproof:", safetext.Text(oneLine(target.Redact(err.Error()))))
	}
	if err := containers.FinalSweep(); err != nil {
		fmt.Fprintln(os.Stderr, "onceproof: removing this run's containers:", safetext.Text(oneLine(target.Redact(err.Error()))))
	}
	os.Exit(code)
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Every line the CLI prints may quote a target, a profile or a
	// results.json: no control character of theirs reaches the terminal.
	stdout, stderr = safetext.Writer(stdout), safetext.Writer(stderr)
	if len(args) == 0 {
		// A bare tck starts nothing: a full run takes a while and writes a
		// folder. `make run` (tck run) is the default run.
		help(stderr)
		return reports.ExitUsage
	}
	name := args[0]
	if name == "--version" || name == "-v" || name == "-version" {
		name = "version" // what every CLI answers; tck version is the command
	}
	if name == "help" || name == "-h" || name == "--help" {
		help(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "tck: unknown command %q (commands: %s; see tck help)\n", target.Redact(name), commandNames())
		return reports.ExitUsage
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "tck %s: %s\n", name, ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tck %s: %s\n", name, oneLine(target.Redact(ue.msg)))
		return reports.ExitUsage
	case errors.Is(err, target.ErrUnavailable):
		fmt.Fprintf(stderr, "tck %s: %s\n", name, oneLine(target.Redact(err.Error())))
		return reports.ExitUnavailable
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(notWrittenError)):
		fmt.Fprintf(stderr, "tck %s: %s\n", name, oneLine(target.Redact(err.Error())))
		return reports.ExitNotWritten
	default:
		fmt.Fprintf(stderr, "tck %s: %s\n", name, oneLine(target.Redact(err.Error())))
		return reports.ExitUsage
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func commandNames() string {
	return "list, targets, plan, run, selftest, report, clean, version"
}

func help(w io.Writer) {
	fmt.Fprintf(w, `tck: the onceproof conformance kit %s

Usage: tck <command> [flags]   (tck <command> -h for its flags; tck --version)

`, kitVersion())
	for _, n := range strings.Split(commandNames(), ", ") {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
A target is SUITE/NAME[=ADDRESS]; ADDRESS is embedded, container or a URL, e.g.
  --target eventstore/sqlite
  --target eventstore/postgres=postgres://user:pw@127.0.0.1:5432/db
  --target broker/nats=nats://127.0.0.1:4222

Exit codes: 0 conformant, 1 a MUST rule failed, 2 inconclusive,
            3 usage or configuration error, 4 a target could not be started or reached,
            5 the run ran but its report could not be written.
`)
}

func cmdVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("version")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	v := kitVersion()
	if v == "devel" {
		// go run, or a build with -buildvcs=false: say how to get the commit.
		v += " (no version stamp and no VCS information: make build stamps the commit)"
	}
	fmt.Fprintf(stdout, "onceproof tck %s\n", v)
	return nil
}

// quiet is a go-redis and rabbitmq-stream-go-client logger that says
// nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
func (quiet) Info(string, ...any)                    {}
func (quiet) Error(string, ...any)                   {}
func (quiet) Debug(string, ...any)                   {}
func (quiet) Warn(string, ...any)                    {}
