package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/tlsmat"
	"github.com/onceproof/tck/internal/verdict"
)

// startTimeout bounds starting one target (a container start included).
const startTimeout = 3 * time.Minute

type planned struct {
	kind target.Kind
	ref  target.Ref
	name string // how results name the target
}

type plan struct {
	suites  []string
	targets []planned
	rules   []string
}

type selection struct {
	suites, rules multi
	targets       addrs
}

// makePlan validates the selection completely before anything is started,
// so a usage error (exit 3) never leaves a half-run behind.
func makePlan(reg *target.Registry, sel selection) (plan, error) {
	var p plan
	if err := checkSuites(sel.suites); err != nil {
		return p, err
	}
	for _, id := range sel.rules {
		if _, ok := catalog.Lookup(id); !ok {
			return p, usagef("unknown rule %q (see tck list)", id)
		}
	}
	p.rules = sel.rules
	wanted := map[string]bool{}
	for _, s := range sel.suites {
		wanted[s] = true
	}
	seen := map[string]bool{}
	for _, t := range sel.targets {
		ref, err := target.Parse(t)
		if err != nil {
			return p, usagef("%v", err)
		}
		if err := checkSuites([]string{ref.Suite}); err != nil {
			return p, err
		}
		if len(wanted) > 0 && !wanted[ref.Suite] {
			return p, usagef("target %s is not in the selected suites (%s)", ref, strings.Join(sel.suites, ", "))
		}
		kind, ref, err := reg.Resolve(ref)
		if err != nil {
			return p, usagef("%v", err)
		}
		name := ref.Key()
		if ref.Address != string(kind.Modes[0]) {
			name = ref.String()
		}
		if seen[name] {
			return p, usagef("target %s is given twice", name)
		}
		seen[name] = true
		p.targets = append(p.targets, planned{kind, ref, name})
	}
	// Suites named by --suite (or all suites, when neither flag is given)
	// without a --target get their default targets.
	named := map[string]bool{}
	for _, t := range p.targets {
		named[t.kind.Suite] = true
	}
	suites := sel.suites
	if len(suites) == 0 && len(sel.targets) == 0 {
		// --rule alone: only the suites holding a selected rule, so a run
		// of ES-2.1 starts no broker, consumer or api target.
		suites = ruleSuites(sel.rules)
	}
	for _, s := range suites {
		if named[s] {
			continue
		}
		found := false
		for _, k := range reg.Kinds(s, false) {
			if k.Default {
				p.targets = append(p.targets, planned{k, target.Ref{Suite: k.Suite, Name: k.Name, Address: string(k.Modes[0])}, k.Key()})
				found = true
			}
		}
		if !found {
			return p, usagef("suite %s has no default target; name one with --target (see tck targets)", s)
		}
	}
	// Run in catalog suite order.
	order := map[string]int{}
	for i, s := range catalog.Suites() {
		order[s] = i
	}
	sortStable(p.targets, func(a, b planned) bool { return order[a.kind.Suite] < order[b.kind.Suite] })
	for _, t := range p.targets {
		if len(p.suites) == 0 || p.suites[len(p.suites)-1] != t.kind.Suite {
			p.suites = append(p.suites, t.kind.Suite)
		}
	}
	if len(p.rules) > 0 {
		in := map[string]bool{}
		for _, s := range p.suites {
			in[s] = true
		}
		for _, id := range p.rules {
			if r := catalog.MustLookup(id); !in[r.Suite] {
				return p, usagef("rule %s belongs to suite %s, which this run does not include", id, r.Suite)
			}
		}
		// A suite or target named alongside --rule that holds none of the
		// rules would start for nothing: refused, never started idle.
		held := map[string]bool{}
		for _, s := range ruleSuites(p.rules) {
			held[s] = true
		}
		for _, t := range p.targets {
			if !held[t.kind.Suite] {
				return p, usagef("%s (suite %s) holds none of the rules selected by --rule (%s)", t.name, t.kind.Suite, strings.Join(p.rules, ", "))
			}
		}
	}
	return p, nil
}

// ruleSuites is the suites holding the given rules (every suite when none
// is given), in catalog order.
func ruleSuites(rules []string) []string {
	if len(rules) == 0 {
		return catalog.Suites()
	}
	var out []string
	for _, s := range catalog.Suites() {
		for _, id := range rules {
			if catalog.MustLookup(id).Suite == s {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func sortStable[T any](s []T, less func(a, b T) bool) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && less(s[j], s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func cmdPlan(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("plan")
	var sel selection
	fs.Var(&sel.suites, "suite", "suite to run (repeatable; default: every suite)")
	fs.Var(&sel.targets, "target", "target SUITE/NAME[=ADDRESS] (repeatable; default: each suite's default)")
	fs.Var(&sel.rules, "rule", "only these rule ids (repeatable)")
	prof := fs.String("profile", "", "a pipeline profile (YAML): print its hazards and what each ack proves; exit 1 on any hazard")
	format := fs.String("format", "text", "with --profile: text or json")
	planOut := fs.String("out", "", "with --profile: also write the analysis as a report folder (report.html, report.md, results.json)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *prof != "" {
		if len(sel.suites)+len(sel.targets)+len(sel.rules) > 0 {
			return usagef("--profile is a static analysis of the profile alone; it takes no --suite, --target or --rule")
		}
		return planProfile(ctx, *prof, *format, *planOut, target.Redact("tck plan "+strings.Join(args, " ")), stdout)
	}
	if *format != "text" || *planOut != "" {
		return usagef("--format and --out are for --profile only")
	}
	p, err := makePlan(registry.Targets(), sel)
	if err != nil {
		return err
	}
	for _, t := range p.targets {
		fmt.Fprintf(stdout, "%s (%s; needs %s)\n", t.name, t.ref.Mode(), t.kind.Needs)
		for _, r := range catalog.All(t.kind.Suite) {
			if len(p.rules) > 0 && !contains(p.rules, r.ID) {
				continue
			}
			fmt.Fprintf(stdout, "  %-7s %-6s %s\n", r.ID, r.Level, r.Title)
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// runConfig is a parsed and validated `tck run`.
type runConfig struct {
	args     []string // the arguments after "run", as given
	p        plan
	out      string
	quiet    bool
	jobs     int            // targets at once (1: one after another)
	opts     target.Options // seed, windows, keep, profile, max wait, api description
	profPlan *profile.Plan
	env      string // --env: the environment this run certifies
}

// parseRun parses and checks a `tck run` command line completely before
// anything is started or written.
func parseRun(args []string, stdout io.Writer) (runConfig, error) {
	fs := newFlags("run")
	var sel selection
	fs.Var(&sel.suites, "suite", "suite to run (repeatable; default: every suite)")
	fs.Var(&sel.targets, "target", "target SUITE/NAME[=ADDRESS] (repeatable; default: each suite's default)")
	fs.Var(&sel.rules, "rule", "only these rule ids (repeatable): only targets of their suites start; the suites' other rules are reported as skipped")
	out := fs.String("out", "", "report folder (default: a new timestamped folder under ./tck-results/)")
	quiet := fs.Bool("quiet", false, "no progress lines, only the summary")
	seed := fs.Int64("seed", 0, "seed for every randomized rule (0: each rule picks one and records it in its evidence)")
	restartWindow := fs.Duration("restart-window", 0, "BR-1.7's de-dupe window across a broker restart (0: chosen from the measured restart time)")
	keep := fs.Bool("keep", false, "keep the data directories of consumer services (consumer/process) for debugging; their paths are in the evidence")
	profFile := fs.String("profile", "", "a pipeline profile (YAML): certify its declared broker streams on the broker target and run the rules at its durations (docs/profile.md)")
	apiDesc := fs.String("api-desc", "", "the endpoint description (YAML or JSON) of an api/http target (docs/api.md); default: the profile's http section, else the kit's default")
	var brokers addrs
	fs.Var(&brokers, "broker", "the broker target SUITE/NAME[=ADDRESS] the consumer suite reads from (repeatable: the consumer targets run once per broker; default its own embedded NATS)")
	jobs := fs.Int("jobs", 0, "how many targets run at once (0: up to 8; 1: one after another)")
	maxWait := fs.Duration("max-wait", 0, "the longest wait a rule may need by definition; a longer one is unknown, never shortened (default 10m with --profile, else the suite's 60s)")
	// Read by fleetArgs before parsing; here for -h and a clear error.
	fs.String("fleet", "", "a fleet file (docs/fleet.md): run one of its shards, in its environment")
	fs.String("shard", "", "with --fleet: the shard to run, from 0 (default $JOB_COMPLETION_INDEX, an Indexed Job's)")
	env := fs.String("env", "", "the environment this run certifies (prod, staging): recorded in results.json; tck report merge and gate group by it")
	fs.Bool("sonobuoy", false, "run as a Sonobuoy plugin: the report under $SONOBUOY_RESULTS_DIR (default /tmp/sonobuoy/results), then results.tar.gz and the done file naming it; a verdict exits 0 (docs/fleet.md)")
	var tlsm tlsmat.Material
	fs.StringVar(&tlsm.CA, "tls-ca", "", "a PEM file of the CAs to trust on every external target of the run (docs/tls.md)")
	fs.StringVar(&tlsm.Cert, "tls-cert", "", "with --tls-key: a PEM client certificate for every external target")
	fs.StringVar(&tlsm.Key, "tls-key", "", "the PEM private key of --tls-cert (the file's content is never shown)")
	fs.StringVar(&tlsm.ServerName, "tls-server-name", "", "the name to verify the servers' certificates against (default: each URL's host)")
	cfg := runConfig{args: args}
	if err := parse(fs, args, stdout); err != nil {
		return cfg, err
	}
	if err := checkEnv(*env); err != nil {
		return cfg, err
	}
	cfg.env = *env
	if sonobuoyAsked(args) && *out == "" {
		*out = filepath.Join(sonobuoyResultsDir(), sonobuoyReport)
	}
	if *seed < 0 || *restartWindow < 0 || *maxWait < 0 || *jobs < 0 {
		return cfg, usagef("--seed, --restart-window, --max-wait and --jobs must not be negative")
	}
	p, err := makePlan(registry.Targets(), sel)
	if err != nil {
		return cfg, err
	}
	if p, err = overBrokers(registry.Targets(), p, brokers); err != nil {
		return cfg, err
	}
	prof, profPlan, err := loadRunProfile(*profFile, p)
	if err != nil {
		return cfg, err
	}
	for _, t := range p.targets {
		if t.kind.Key() == "consumer/process" {
			if _, _, err := registry.ServiceEnvelope(prof); err != nil {
				return cfg, usagef("%v", err)
			}
		}
	}
	desc, err := checkAPIDesc(*apiDesc, p)
	if err != nil {
		return cfg, err
	}
	if tlsm.Empty() {
		if tlsm, err = fileMaterial(prof, desc); err != nil {
			return cfg, err
		}
	}
	if err := tlsm.Check(); err != nil {
		return cfg, usagef("%v", err)
	}
	if err := checkTLSTargets(tlsm, p); err != nil {
		return cfg, err
	}
	cfg.p, cfg.out, cfg.quiet, cfg.profPlan, cfg.jobs = p, *out, *quiet, profPlan, *jobs
	cfg.opts = target.Options{Seed: *seed, RestartWindow: *restartWindow, Keep: *keep, Profile: prof, MaxWait: *maxWait, APIDesc: *apiDesc, TLS: tlsm}
	return cfg, nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if sonobuoyAsked(args) {
		return runForSonobuoy(ctx, args, stdout, stderr)
	}
	return runOnce(ctx, args, stdout, stderr)
}

// runOnce is one tck run: parse, run every target, write the report.
func runOnce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	args, err := fleetArgs(args)
	if err != nil {
		return err
	}
	cfg, err := parseRun(args, stdout)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return interrupted() // while loading: nothing started, nothing written
	}
	p := cfg.p
	// The kit's heartbeat for the whole run: a pause of this process is
	// the kit's, and timed rules ask about it (package stall).
	defer stall.Hold()()
	// The run writes its report itself (--out); an author's TCK_REPORT_DIR
	// in the environment adds none, and a rule's reason says how to replay
	// it with tck run --seed.
	defer spec.DrivenByCLI()()
	started := time.Now()
	dir, unlock, err := claimOutDir(cfg.out, started)
	if err != nil {
		return err
	}
	defer unlock()
	logFile, err := os.Create(filepath.Join(dir, runLog))
	if err != nil {
		return usagef("cannot write into the report folder: %v", err)
	}
	defer logFile.Close()

	if profPlan := cfg.profPlan; profPlan != nil && len(profPlan.Hazards) > 0 {
		// Said before the rules run: the run exits 1 for them whatever
		// the rules find (reports/planrun.go).
		h := profPlan.Hazards[0]
		fmt.Fprintf(stderr, "tck run: the declared pipeline has %d hazard(s), so this run exits 1 whatever the rules find; first: %s %s at %s:%d (tck plan --profile %s lists them)\n",
			len(profPlan.Hazards), h.Rule, h.Check, profPlan.File, h.Line, profPlan.File)
	}
	rep := &reports.Report{
		Kit:  reports.Kit{Name: "onceproof", Version: kitVersion(), GoVersion: runtime.Version()},
		Run:  reports.Run{Command: target.Redact("tck run " + strings.Join(args, " ")), Started: started, Suites: p.suites, Rules: p.rules, Environment: cfg.env},
		Plan: cfg.profPlan,
	}
	for _, o := range runTargets(ctx, cfg, logFile, stderr) {
		o.target.Environment = cfg.env
		rep.Targets = append(rep.Targets, o.target)
		rep.Results = append(rep.Results, o.results...)
	}
	rep.Run.Finished = time.Now()
	rep.Run.DurationMs = rep.Run.Finished.Sub(started).Milliseconds()
	rep.Finish()
	if ctx.Err() != nil && rep.Summary.ExitCode == reports.ExitConformant {
		rep.Summary.ExitCode, rep.Summary.Conclusion = reports.ExitInconclusive, "inconclusive: the run was interrupted"
	}
	if err := reports.WriteAll(dir, rep); err != nil {
		fmt.Fprintf(stdout, "%s: %s\n", rep.Summary.Conclusion, countsLine(rep.Summary.Counts))
		return notWritten("run", err)
	}
	fmt.Fprintf(stdout, "%s: %s\n", rep.Summary.Conclusion, countsLine(rep.Summary.Counts))
	printGaps(stdout, rep)
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, reports.FileMarkdown))
	return exitError{code: rep.Summary.ExitCode}
}

// sink is where one target's run says what it does: the terminal and
// run.log, in the run's order (console).
type sink struct {
	line    func(string) // a line in the run's order: starting, each rule, done (not with --quiet)
	errLine func(string) // a line in the run's order, printed with --quiet too
	note    func(string) // a long rule's progress line ("CO-5.1: 120 of 200 events done (15s)"), shown at once
	tnote   func(string) // the target's own progress line (a long start), shown at once
	log     io.Writer    // run.log
}

// outcome is what one target contributes to the report.
type outcome struct {
	target  reports.Target
	results []verdict.Result
}

// runTarget starts one target, runs its suite and stops it.
func runTarget(ctx context.Context, cfg runConfig, t planned, s sink) outcome {
	p := cfg.p
	if ctx.Err() != nil {
		return interruptedTarget(t, "the run was interrupted", "the run was interrupted before this target started")
	}
	if t.ref.Address == "" {
		// No address and none in the kind's variable: the kind decides
		// (broker/redis starts a server of its own).
		s.line(fmt.Sprintf("%s: starting", t.name))
	} else {
		s.line(fmt.Sprintf("%s: starting (%s)", t.name, t.ref.Mode()))
	}
	ref := t.ref
	ref.Opts = cfg.opts
	ref.Opts.Progress = s.tnote
	ref.Opts.Broker = t.ref.Opts.Broker // --broker (brokerflag.go)
	// A start that failed while the kit was paused or late (its host
	// parked it) timed out on the kit's clock, not the target's: a
	// server's readiness wait, a probe's deadline. It is tried again, at
	// most twice; a start still failing names how late the kit was.
	var st *target.Started
	var err error
	for try := 1; ; try++ {
		t0 := time.Now()
		sctx, cancel := context.WithTimeout(ctx, startTimeout)
		st, err = t.kind.Start(sctx, ref)
		cancel()
		if err == nil || interruptedNow(ctx) {
			break
		}
		late := stall.Since(t0)
		if !late.Paused() && late.Lag < time.Second {
			break
		}
		if try == 3 {
			err = fmt.Errorf("%w (%s)", err, late)
			break
		}
		s.line(fmt.Sprintf("%s: the start failed while the kit was late (%s); starting again", t.name, late))
	}
	if err != nil && interruptedNow(ctx) {
		// Interrupted while starting: the run is inconclusive, the
		// target is not to blame.
		const why = "the run was interrupted while the target was starting"
		return interruptedTarget(t, why, why)
	}
	if err != nil {
		if !errors.Is(err, target.ErrUnavailable) {
			err = target.Unavailable(t.ref, err)
		}
		msg := oneLine(target.Redact(err.Error()))
		s.errLine("tck run: " + msg)
		return outcome{target: reports.Target{Info: target.Info{Name: t.name, Suite: t.kind.Suite, Mode: t.ref.Mode(), Address: target.Redact(t.ref.Address)}, Status: "unavailable", Error: msg}}
	}
	st.Info.Name = t.name
	o := outcome{target: reports.Target{Info: st.Info, Status: "ran"}}
	tstart := time.Now()
	var mu sync.Mutex
	afterInterrupt := map[string]bool{} // rules that failed once the run was interrupted
	o.results = st.Rules().Run(ctx, target.RunOptions{
		Target: t.name,
		Rules:  p.rules,
		// A long rule's "N of M steps done" (spec's R.Progress).
		Note: func(line string) {
			fmt.Fprintln(s.log, line)
			s.note(line)
		},
		Progress: func(r verdict.Result) {
			if r.Verdict == verdict.Fail && interruptedNow(ctx) {
				mu.Lock()
				afterInterrupt[r.Rule] = true
				mu.Unlock()
				r.Verdict = verdict.Unknown
			}
			if r.Verdict == verdict.Skipped && len(p.rules) > 0 && !contains(p.rules, r.Rule) {
				return // not selected: in the report as skipped, not on the terminal
			}
			logResult(s.log, r)
			s.line(fmt.Sprintf("  %-7s %-14s %6.0fms  %s", r.Rule, r.Verdict, r.DurationMs, clip(r.Reason, 100)))
		},
	})
	// A failure decided after the interrupt is not the target's to carry:
	// the rule's context was cancelled and what the kit created (servers,
	// folders) was being removed under it. Failures decided before stand.
	for k, r := range o.results {
		if afterInterrupt[r.Rule] && r.Verdict == verdict.Fail {
			o.results[k].Verdict = verdict.Unknown
			o.results[k].Reason = "the run was interrupted while this rule ran, so its failure may be the interrupt's: " + r.Reason
		}
	}
	if err := st.Stop(); err != nil {
		s.errLine(fmt.Sprintf("tck run: %s: stopping: %s", t.name, oneLine(target.Redact(err.Error()))))
	}
	s.line(fmt.Sprintf("%s: done in %.1fs", t.name, time.Since(tstart).Seconds()))
	return o
}

// runLog is the run's log in the report folder: every rule's line, a
// failed or undecided rule's notes (where the kit failed it), and the
// progress lines of long rules.
const runLog = "run.log"

// logResult writes one rule's outcome into run.log: its line, and for a
// fail or unknown the notes of its evidence.
func logResult(w io.Writer, r verdict.Result) {
	fmt.Fprintf(w, "%s %s %s: %s\n", r.Target, r.Rule, r.Verdict, r.Reason)
	if r.Verdict != verdict.Fail && r.Verdict != verdict.Unknown || r.Evidence == nil {
		return
	}
	for _, n := range r.Evidence.Notes {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(n, "\n", "\n  "))
	}
}

// interruptedNow reports whether a signal has come: the run's context is
// cancelled, or the leftovers watcher, which hears the same signal on its
// own channel, has begun removing what the kit created (a target failing
// because its folder vanished can be seen before the context's cancel).
func interruptedNow(ctx context.Context) bool {
	return ctx.Err() != nil || leftovers.Closing()
}

// interruptedTarget is a target the run never ran: every rule skipped.
func interruptedTarget(t planned, why, reason string) outcome {
	return outcome{
		target:  reports.Target{Info: target.Info{Name: t.name, Suite: t.kind.Suite, Mode: t.ref.Mode()}, Status: "skipped", Error: why},
		results: skippedAll(t, reason),
	}
}

// notWrittenError is a report that could not be written after the run
// ran: exit 5, never 3 (which says nothing ran).
type notWrittenError struct {
	what string // what ran: "run", "analysis"
	err  error
}

func (e notWrittenError) Error() string {
	return "the " + e.what + " ran, but its report could not be written (no file of it was replaced): " + e.err.Error()
}

func notWritten(what string, err error) error { return notWrittenError{what, err} }

const msgInterruptedEarly = "interrupted before anything started: nothing was run and no report was written"

// interrupted ends a command a signal stopped before it started anything.
func interrupted() error {
	return exitError{reports.ExitInconclusive, msgInterruptedEarly}
}

func skippedAll(t planned, reason string) []verdict.Result {
	var out []verdict.Result
	for _, r := range catalog.All(t.kind.Suite) {
		out = append(out, verdict.Result{Rule: r.ID, Suite: r.Suite, Target: t.name, Level: string(r.Level), Kind: string(r.Kind),
			Title: r.Title, Verdict: verdict.Skipped, Reason: reason, Evidence: &verdict.Evidence{}})
	}
	return out
}

func countsLine(c map[verdict.Verdict]int) string {
	var parts []string
	for _, v := range []verdict.Verdict{verdict.Pass, verdict.Fail, verdict.Unknown, verdict.NotApplicable, verdict.Skipped} {
		parts = append(parts, fmt.Sprintf("%d %s", c[v], v))
	}
	return strings.Join(parts, ", ")
}

func clip(s string, n int) string {
	s = oneLine(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func cmdSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("selftest")
	var suites multi
	fs.Var(&suites, "suite", "suite to self-test (repeatable; default: every suite)")
	out := fs.String("out", "", "also write the matrices as JSON into this folder")
	quiet := fs.Bool("quiet", false, "no progress lines")
	jobs := fs.Int("jobs", 1, "how many targets of a suite's matrix run at once")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *jobs < 1 {
		return usagef("--jobs must be at least 1")
	}
	if err := checkSuites(suites); err != nil {
		return err
	}
	if len(suites) == 0 {
		suites = catalog.Suites()
	}
	reg := registry.Targets()
	var matrices []selftest.Matrix
	problems := 0
	for _, s := range suites {
		if ctx.Err() != nil {
			return exitError{code: reports.ExitInconclusive}
		}
		m := selftest.Run(ctx, reg, s, selftest.Options{Jobs: *jobs, Progress: func(name string, r verdict.Result) {
			if !*quiet {
				fmt.Fprintf(stderr, "  %-45s %-7s %s\n", name, r.Rule, r.Verdict)
			}
		}})
		matrices = append(matrices, m)
		fmt.Fprintln(stdout, m.Text())
		for _, pr := range m.Problems() {
			fmt.Fprintf(stdout, "PROBLEM: %s\n", pr)
			problems++
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return usagef("cannot create %s: %v", *out, err)
		}
		data, _ := json.MarshalIndent(matrices, "", "  ")
		if err := os.WriteFile(filepath.Join(*out, "selftest.json"), data, 0o644); err != nil {
			return err
		}
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "selftest: %d problems\n", problems)
		return exitError{code: reports.ExitMustFailed}
	}
	fmt.Fprintln(stdout, "selftest: the reference passes every rule, every mutant fails each rule it is registered to fail (so at least one), every rule is failed by a mutant")
	return nil
}

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "diff":
			return cmdReportDiff(ctx, args[1:], stdout, stderr)
		case "merge":
			return cmdReportMerge(ctx, args[1:], stdout, stderr)
		case "gate":
			return cmdReportGate(ctx, args[1:], stdout, stderr)
		}
	}
	fs := newFlags("report")
	in := fs.String("in", "", "a report folder holding results.json")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *in == "" {
		return usagef("--in DIR is required")
	}
	rep, err := reports.Read(filepath.Join(*in, reports.FileJSON))
	if err != nil {
		return usagef("%v", err)
	}
	if err := reports.WriteAll(*in, rep); err != nil {
		return notWritten("re-rendering", err)
	}
	fmt.Fprintf(stdout, "%s: %s\nrewrote %s\n", rep.Summary.Conclusion, countsLine(rep.Summary.Counts), *in)
	return exitError{code: rep.Summary.ExitCode}
}

// tlsKinds are the target kinds that use the run's trust material at a URL
// (docs/tls.md); the kit's own servers (embedded, container) are plain.
var tlsKinds = map[string]bool{"broker/nats": true, "broker/redis": true, "broker/kafka": true, "broker/rabbitmq": true, "eventstore/postgres": true, "api/http": true}

// checkTLSTargets refuses --tls-* for a target that would not use it,
// rather than run it without the material the user gave.
func checkTLSTargets(m tlsmat.Material, p plan) error {
	if m.Empty() {
		return nil
	}
	for _, t := range p.targets {
		if t.kind.Suite == "consumer" {
			// An in-process consumer reads through the broker target's own
			// handle (--broker), which takes the material; a consumer
			// service through the kit's proxies, which speak TLS to a NATS
			// or Redis server (not to Kafka: they read its frames and
			// would need SASL in the clear).
			if t.ref.Opts.Broker == "" {
				return usagef("%s: the consumer suite uses --tls-* only over a --broker target (docs/tls.md)", t.name)
			}
			k, ok := registry.Targets().Get(brokerKey(t.ref.Opts.Broker))
			if !ok || !tlsKinds[k.Key()] {
				return usagef("%s: --tls-* is not supported for its broker yet (docs/tls.md lists what is)", t.name)
			}
			if registry.IsService(t.kind) && k.Key() != "broker/nats" && k.Key() != "broker/redis" {
				return usagef("%s: a consumer service takes --tls-* over broker/nats or broker/redis only (docs/tls.md)", t.name)
			}
			continue
		}
		if t.ref.Mode() == target.External && !tlsKinds[t.kind.Key()] {
			return usagef("%s: --tls-* is not supported for this target yet (docs/tls.md lists what is)", t.name)
		}
	}
	return nil
}

// brokerKey is the SUITE/NAME of a --broker value.
func brokerKey(b string) string {
	key, _, _ := strings.Cut(b, "=")
	return key
}
