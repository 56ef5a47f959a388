package spec

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// EnvReportDir names the folder an author's Check and Register write their
// report bundle into, so a CI job turns the report on without a code
// change; the ReportTo option does the same from the code.
const EnvReportDir = "TCK_REPORT_DIR"

// cliDriven is set while the kit's own runner drives the rules: the CLI
// writes its report itself (--out), so the author's report stays off.
var cliDriven atomic.Int32

// DrivenByCLI turns the author's report off until the returned function is
// called: the CLI's runner writes its own report.
func DrivenByCLI() func() {
	cliDriven.Add(1)
	return func() { cliDriven.Add(-1) }
}

// CLIDriven says whether the kit's own runner (tck run, tck selftest)
// drives the rules, rather than an author's Check or Register: a rule's
// reason tells each how to replay it (--seed, Target.Seed).
func CLIDriven() bool { return cliDriven.Load() > 0 }

// reportDir is where this run's report goes, "" for none.
func reportDir(o Option) string {
	if cliDriven.Load() > 0 {
		return ""
	}
	if o.reportDir != "" {
		return o.reportDir
	}
	return os.Getenv(EnvReportDir)
}

// started is when this process first wrote a report.
var started = time.Now()

// writeReport adds one target's results to the folder's report.
func writeReport(dir, suite, name string, mode target.Mode, results []verdict.Result) error {
	run := reports.Run{Command: target.Redact(command()), Started: started}
	t := reports.Target{Info: target.Info{Name: name, Suite: suite, Mode: mode}, Status: "ran"}
	return reports.Add(dir, reports.Kit{Name: "onceproof", Version: kitVersion(), GoVersion: runtime.Version()}, run, t, results)
}

// command is the test binary's command line, as the report shows it.
func command() string {
	if len(os.Args) == 0 {
		return "go test"
	}
	return strings.Join(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...), " ")
}

// kitVersion is the kit module's version as this binary was built with
// it: the version an author's go.mod requires, or the commit of a
// checkout of the kit itself.
func kitVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	const mod = "github.com/onceproof/tck"
	for _, d := range bi.Deps {
		if d.Path == mod {
			if d.Replace != nil {
				return d.Version + " (replaced by " + d.Replace.Path + ")"
			}
			return d.Version
		}
	}
	if bi.Main.Path == mod {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
	}
	return "devel"
}

// resultOf is one rule's outcome under the go test driver as a result.
func resultOf(ru rule, targetName string, out outcome, d time.Duration) verdict.Result {
	ev := &verdict.Evidence{}
	if out.ev != nil {
		ev = out.ev.Snapshot()
	}
	return verdict.Result{
		Rule: ru.id, Suite: ru.meta.Suite, Target: targetName, Level: string(ru.meta.Level), Kind: string(ru.meta.Kind),
		Title: ru.meta.Title, Verdict: out.v, Reason: out.reason, Missing: out.missing, DurationMs: float64(d.Microseconds()) / 1000, Evidence: ev,
	}
}
