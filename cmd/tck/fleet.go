package main

// A platform team's fleet (docs/fleet.md): each shard is one `tck run`
// (--env names its environment; --sonobuoy makes it a Sonobuoy plugin),
// `tck report merge` makes one report of the shards and `tck report gate`
// answers whether an environment may deploy.

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/target"
	"golang.org/x/sync/errgroup"
)

const (
	// sonobuoyDefaultDir is where Sonobuoy's worker looks when the plugin
	// sets no SONOBUOY_RESULTS_DIR.
	sonobuoyDefaultDir = "/tmp/sonobuoy/results"
	// sonobuoyReport is the report folder under the results folder.
	sonobuoyReport = "tck"
	// sonobuoyTarball is what the done file names: the junit file the
	// aggregator reads, and the kit's bundle as raw files beside it.
	sonobuoyTarball = "results.tar.gz"
)

// fleetMemoryLimit is the soft heap limit of merge and gate (a limit the
// collector aims at, not a cap: a larger live set still completes).
const fleetMemoryLimit = 160 << 20

var envName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func checkEnv(env string) error {
	if env != "" && !envName.MatchString(env) {
		return usagef("--env %q: an environment is 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", env)
	}
	return nil
}

// sonobuoyAsked says whether this run is a Sonobuoy plugin's: --sonobuoy,
// or the results folder Sonobuoy sets for every plugin.
func sonobuoyAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--sonobuoy" || a == "-sonobuoy" || a == "--sonobuoy=true" || a == "-sonobuoy=true" {
			return true
		}
	}
	return os.Getenv("SONOBUOY_RESULTS_DIR") != ""
}

func sonobuoyResultsDir() string {
	if d := os.Getenv("SONOBUOY_RESULTS_DIR"); d != "" {
		return d
	}
	return sonobuoyDefaultDir
}

// runForSonobuoy is one run under Sonobuoy's worker contract: results in
// the results folder, then a done file naming them. The done file is
// written on every path (a bad argument, an unreachable target), or the
// worker would wait for it until its timeout. A verdict, whatever it is,
// is a result: the process exits 0 and the run's exit code is in
// results.json and the junit file. Only an error of the kit's own (bad
// input, a report it could not write) keeps its exit code.
func runForSonobuoy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dir := sonobuoyResultsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return notWritten("sonobuoy", fmt.Errorf("the results folder %s: %w", dir, err))
	}
	var runErr error
	for _, a := range args {
		if a == "--out" || a == "-out" || strings.HasPrefix(a, "--out=") || strings.HasPrefix(a, "-out=") {
			runErr = usagef("--sonobuoy writes the report under the results folder %s: drop --out", dir)
		}
	}
	if runErr == nil {
		runErr = runOnce(ctx, args, stdout, stderr)
	}
	code, verdictCode := exitCodeOf(runErr)
	if err := writeSonobuoy(dir, filepath.Join(dir, sonobuoyReport), runErr, code); err != nil {
		return notWritten("sonobuoy", err)
	}
	fmt.Fprintf(stdout, "sonobuoy: %s written and named in %s (the run's exit code %d is in the results)\n",
		filepath.Join(dir, sonobuoyTarball), filepath.Join(dir, "done"), code)
	if verdictCode {
		return nil
	}
	return runErr
}

// exitCodeOf is the exit code err gives a run, and whether it is a
// verdict's (0, 1, 2, 4: the targets', not the kit's own error).
func exitCodeOf(err error) (int, bool) {
	var ee exitError
	switch {
	case err == nil:
		return reports.ExitConformant, true
	case errors.As(err, &ee):
		return ee.code, ee.code != reports.ExitUsage && ee.code != reports.ExitNotWritten
	case errors.Is(err, target.ErrUnavailable):
		return reports.ExitUnavailable, true
	case errors.As(err, new(notWrittenError)):
		return reports.ExitNotWritten, false
	}
	return reports.ExitUsage, false
}

// writeSonobuoy packs the report folder (or, when the run wrote none, a
// junit file saying why) into the tarball, then writes the done file by
// rename, so the worker never reads half of it.
func writeSonobuoy(dir, report string, runErr error, code int) error {
	tarball := filepath.Join(dir, sonobuoyTarball)
	tmp, err := os.CreateTemp(dir, ".results-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	wrote := false
	if _, err := os.Stat(filepath.Join(report, reports.FileJSON)); err == nil {
		err := filepath.WalkDir(report, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(report, path)
			if err != nil {
				return err
			}
			name := sonobuoyReport + "/" + filepath.ToSlash(rel)
			if rel == reports.FileJUnit {
				name = reports.FileJUnit // at the top: the aggregator's junit
			}
			return addFile(tw, name, path)
		})
		if err != nil {
			tmp.Close()
			return err
		}
		wrote = true
	}
	if !wrote {
		msg := "the run wrote no report"
		if runErr != nil {
			msg = oneLine(target.Redact(runErr.Error()))
		}
		if err := addBytes(tw, reports.FileJUnit, errorJUnit(msg, code)); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		tmp.Close()
		return err
	}
	if err := gz.Close(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// The worker may run as another user than the plugin.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), tarball); err != nil {
		return err
	}
	abs, err := filepath.Abs(tarball)
	if err != nil {
		return err
	}
	done, err := os.CreateTemp(dir, ".done-*")
	if err != nil {
		return err
	}
	defer os.Remove(done.Name())
	if _, err := done.WriteString(abs); err != nil {
		done.Close()
		return err
	}
	if err := done.Close(); err != nil {
		return err
	}
	if err := os.Chmod(done.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(done.Name(), filepath.Join(dir, "done"))
}

func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func addBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// errorJUnit is the junit of a run that wrote no report: one failed case
// naming why, so the aggregator shows the reason, not a missing file.
func errorJUnit(msg string, code int) []byte {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string  `xml:"name,attr"`
		Classname string  `xml:"classname,attr"`
		Failure   failure `xml:"failure"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	b, _ := xml.MarshalIndent(testsuite{Name: "onceproof", Tests: 1, Failures: 1, Cases: []testcase{{
		Name: "tck run", Classname: "onceproof",
		Failure: failure{Message: msg, Text: fmt.Sprintf("tck run exited %d before writing a report: %s", code, msg)},
	}}}, "", "  ")
	return append([]byte(xml.Header), b...)
}

// readShards reads the bundles (report folders or results.json files), as
// many at once as there are processors; a bad one is one line naming it.
func readShards(paths []string) ([]reports.Shard, error) {
	shards := make([]reports.Shard, len(paths))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range paths {
		g.Go(func() error {
			r, err := reports.ReadShard(p)
			if err != nil {
				return usagef("%v", err)
			}
			shards[i] = reports.Shard{Path: p, Report: r}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return shards, nil
}

// cmdReportMerge is `tck report merge --out DIR SHARD...`: one report of a
// fleet's shards, every (environment, target) at its last run, with a
// run's exit code.
func cmdReportMerge(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("report merge")
	out := fs.String("out", "", "the merged report folder (required; new or a kit report folder)")
	if err := parseOperands(fs, args, stdout, "SHARD..."); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out DIR is required (see tck report merge -h)")
	}
	if fs.NArg() == 0 {
		return usagef("want at least one shard (a report folder or its results.json)")
	}
	// A thousand shards are garbage a few hundred KB at a time: a soft
	// limit makes the collector keep the heap near what is live.
	debug.SetMemoryLimit(fleetMemoryLimit)
	shards, err := readShards(fs.Args())
	if err != nil {
		return err
	}
	m := reports.Merge(shards, reports.Kit{Name: "onceproof", Version: kitVersion(), GoVersion: runtime.Version()},
		target.Redact("tck report merge "+strings.Join(args, " ")))
	dir, unlock, err := claimOutDir(*out, time.Now())
	if err != nil {
		return err
	}
	defer unlock()
	if err := reports.WriteAll(dir, m); err != nil {
		return notWritten("merge", err)
	}
	fmt.Fprintf(stdout, "%s: %s; %d target(s) from %d shard(s)\nreport: %s\n", m.Summary.Conclusion, countsLine(m.Summary.Counts),
		len(m.Targets), len(shards), filepath.Join(dir, reports.FileMarkdown))
	return exitError{code: m.Summary.ExitCode}
}

// cmdReportGate is `tck report gate --env ENV [--require LEVEL] SHARD...`:
// may ENV deploy? 0 only when every target of it is conformant at its last
// run; otherwise a run's exit code and a line per blocker.
func cmdReportGate(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("report gate")
	env := fs.String("env", "", "the environment to gate (required; a shard's tck run --env)")
	require := fs.String("require", "MUST", "the lowest rule level that must pass: MUST, SHOULD or MAY")
	format := fs.String("format", "text", "text or json")
	if err := parseOperands(fs, args, stdout, "SHARD..."); err != nil {
		return err
	}
	if *env == "" {
		return usagef("--env ENV is required (see tck report gate -h)")
	}
	if err := checkEnv(*env); err != nil {
		return err
	}
	level := catalog.Level(strings.ToUpper(*require))
	if level != catalog.Must && level != catalog.Should && level != catalog.May {
		return usagef("--require %q: want MUST, SHOULD or MAY", *require)
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("want at least one shard (a report folder or its results.json)")
	}
	debug.SetMemoryLimit(fleetMemoryLimit)
	shards, err := readShards(fs.Args())
	if err != nil {
		return err
	}
	g := reports.Gate(shards, *env, level)
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(g); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "gate %s: %s\n", *env, g.Line)
		for _, b := range g.Blockers {
			what := b.Verdict
			if b.Rule != "" {
				what = b.Rule + " " + b.Verdict
			}
			fmt.Fprintf(stdout, "  %s  %s: %s (shard %s)\n", b.Target, what, clip(b.Reason, 160), b.Shard)
		}
		if g.NotRun > 0 {
			fmt.Fprintf(stdout, "  %d required rule(s) were not run at their target's last run (a --rule filter)\n", g.NotRun)
		}
	}
	if g.ExitCode != reports.ExitConformant {
		return exitError{code: g.ExitCode}
	}
	return nil
}
