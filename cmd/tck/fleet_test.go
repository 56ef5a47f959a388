package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
	"go.yaml.in/yaml/v3"
)

// fleetTargets are three shards of one environment: two conformant, one
// failed (a mutant that loses bytes fails ES-1.1).
var fleetTargets = []string{"eventstore/memory", "eventstore/sqlite", "eventstore/mutant-lossy-bytes"}

// matrix is a report's (target, rule) -> verdict, the target named without
// its environment.
func matrix(t *testing.T, dir, env string) map[string]string {
	t.Helper()
	rep, err := reports.ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range rep.Results {
		m[strings.TrimPrefix(r.Target, env+"/")+" "+r.Rule] = string(r.Verdict)
	}
	return m
}

// TestMergeMatchesOneRun: three shards merged give the matrix and exit
// code of one run of the same targets; the gate blocks on the failed
// target by name and opens once a later run of it passes.
func TestMergeMatchesOneRun(t *testing.T) {
	dir := t.TempDir()
	var shards []string
	for i, tg := range fleetTargets {
		out := filepath.Join(dir, "shard"+string(rune('a'+i)))
		code, _, stderr := tck(t, "run", "--quiet", "--env", "prod", "--target", tg, "--rule", "ES-1.1", "--out", out)
		if want := map[bool]int{true: 1, false: 0}[strings.Contains(tg, "mutant")]; code != want {
			t.Fatalf("shard %s: exit %d, want %d; %s", tg, code, want, stderr)
		}
		shards = append(shards, out)
	}
	one := filepath.Join(dir, "one")
	args := []string{"run", "--quiet", "--env", "prod", "--rule", "ES-1.1", "--out", one}
	for _, tg := range fleetTargets {
		args = append(args, "--target", tg)
	}
	oneCode, _, stderr := tck(t, args...)
	merged := filepath.Join(dir, "merged")
	code, stdout, mergeErr := tck(t, append([]string{"report", "merge", "--out", merged}, shards...)...)
	if code != oneCode || code != reports.ExitMustFailed {
		t.Fatalf("merge exit %d, one run exit %d, want both 1; %s %s %s", code, oneCode, stdout, mergeErr, stderr)
	}
	got, want := matrix(t, merged, "prod"), matrix(t, one, "prod")
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("merged matrix has %d cells, one run %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: merged %q, one run %q", k, got[k], v)
		}
	}
	for _, f := range []string{reports.FileMarkdown, reports.FileHTML, reports.FileJUnit} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("merged report lacks %s: %v", f, err)
		}
	}

	code, stdout, _ = tck(t, append([]string{"report", "gate", "--env", "prod"}, shards...)...)
	if code != reports.ExitMustFailed || !strings.Contains(stdout, "prod/eventstore/mutant-lossy-bytes  ES-1.1 fail") {
		t.Fatalf("gate on the failed shard: exit %d, want 1 naming the target:\n%s", code, stdout)
	}
	// The same gate on the merged report says the same.
	if code, _, _ := tck(t, "report", "gate", "--env", "prod", merged); code != reports.ExitMustFailed {
		t.Errorf("gate on the merged report: exit %d, want 1", code)
	}

	// Fixed: a later run of that target that passes. The shard is the
	// failed one's results.json with the verdict a fixed target gets, and
	// a later finish; the gate reads the target at its last run.
	rep, err := reports.ReadBundle(shards[2])
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Results {
		if rep.Results[i].Rule == "ES-1.1" {
			rep.Results[i].Verdict, rep.Results[i].Reason = "pass", "fixed"
		}
	}
	rep.Run.Finished = rep.Run.Finished.Add(1e9)
	rep.Finish()
	fixed := filepath.Join(dir, "fixed")
	if err := reports.WriteAll(fixed, rep); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = tck(t, append([]string{"report", "gate", "--env", "prod"}, append(shards, fixed)...)...)
	if code != reports.ExitConformant || !strings.Contains(stdout, "deployable") {
		t.Fatalf("gate once fixed: exit %d, want 0:\n%s", code, stdout)
	}
	// The earlier failure given after the fix does not win: the last run does.
	code, _, _ = tck(t, "report", "gate", "--env", "prod", fixed, shards[2], shards[0], shards[1])
	if code != reports.ExitConformant {
		t.Errorf("gate with the fix given first: exit %d, want 0 (the target's last run passed)", code)
	}
}

func TestGateBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"report", "gate", dir},                 // no --env
		{"report", "gate", "--env", "prod"},     // no shard
		{"report", "gate", "--env", "a b", dir}, // a bad environment
		{"report", "gate", "--env", "prod", "--require", "X", dir},
		{"report", "gate", "--env", "prod", dir},             // no results.json there
		{"report", "gate", "--env", "prod", dir, "--format"}, // a flag after a shard
		{"report", "merge", dir},                             // no --out
		{"run", "--env", "-bad", "--target", "eventstore/memory"},
	}
	for _, args := range cases {
		code, stdout, stderr := tck(t, args...)
		if code != reports.ExitUsage || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 3 and one line", args, code, stdout, stderr)
		}
	}
}

// TestSonobuoyWorkerContract plays Sonobuoy's worker: the run writes its
// results under SONOBUOY_RESULTS_DIR, then the done file naming a tarball
// holding the junit file at its top and the kit's bundle; a failed rule
// is a result (exit 0), and a bad argument still writes done.
func TestSonobuoyWorkerContract(t *testing.T) {
	results := t.TempDir()
	t.Setenv("SONOBUOY_RESULTS_DIR", results)
	code, stdout, stderr := tck(t, "run", "--quiet", "--target", "eventstore/mutant-lossy-bytes", "--rule", "ES-1.1")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a verdict is a result); %s %s", code, stdout, stderr)
	}
	files := readDone(t, results)
	var suites struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(files[reports.FileJUnit], &suites); err != nil || suites.Failures == 0 {
		t.Errorf("junit.xml at the tarball's top: %v, failures %d, want the failed rule", err, suites.Failures)
	}
	var rep struct {
		Summary struct{ ExitCode int } `json:"summary"`
	}
	if err := json.Unmarshal(files["tck/"+reports.FileJSON], &rep); err != nil || rep.Summary.ExitCode != reports.ExitMustFailed {
		t.Errorf("tck/results.json: %v, exit code %d, want 1 recorded", err, rep.Summary.ExitCode)
	}
	if _, ok := files["tck/"+reports.FileHTML]; !ok {
		t.Errorf("the bundle lacks report.html: %v", keys(files))
	}

	bad := t.TempDir()
	t.Setenv("SONOBUOY_RESULTS_DIR", bad)
	code, _, stderr = tck(t, "run", "--target", "eventstore/nosuch")
	if code != reports.ExitUsage || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a bad target under Sonobuoy: exit %d, stderr %q; want 3 and one line", code, stderr)
	}
	files = readDone(t, bad)
	if !strings.Contains(string(files[reports.FileJUnit]), "eventstore/nosuch") {
		t.Errorf("the junit of a run that wrote no report should name why:\n%s", files[reports.FileJUnit])
	}
}

// readDone reads the done file as the worker does and the tarball it names.
func readDone(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	name, err := os.ReadFile(filepath.Join(dir, "done"))
	if err != nil {
		t.Fatalf("no done file: %v", err)
	}
	f, err := os.Open(string(name))
	if err != nil {
		t.Fatalf("the done file names %q: %v", name, err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	return files
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestFleetExamples: every shard of examples/fleet/fleet.yaml, and the
// arguments the Sonobuoy plugin and the Indexed Job give the image, are a
// valid tck run (parsed, nothing started).
func TestFleetExamples(t *testing.T) {
	t.Setenv("NATS_URL", "nats://user:pw@127.0.0.1:4222")
	t.Setenv("ORDERS_DB_URL", "postgres://u:pw@127.0.0.1:5432/orders")
	fleet := filepath.Join(pkgDir, "..", "..", "examples", "fleet", "fleet.yaml")
	for n := range 3 {
		args, err := fleetArgs([]string{"--fleet", fleet, "--shard", string(rune('0' + n))})
		if err != nil {
			t.Fatalf("shard %d: %v", n, err)
		}
		if _, err := parseRun(args, io.Discard); err != nil {
			t.Errorf("shard %d: %v (%v)", n, err, args)
		}
	}
	for _, f := range []string{"sonobuoy-plugin.yaml", "indexed-job.yaml"} {
		data, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "examples", "fleet", f))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Spec struct {
				Args     []string `yaml:"args"`
				Template struct {
					Spec struct {
						Containers []struct {
							Args []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		args := doc.Spec.Args
		if len(doc.Spec.Template.Spec.Containers) > 0 {
			args = doc.Spec.Template.Spec.Containers[0].Args
		}
		if len(args) < 2 || args[0] != "run" {
			t.Fatalf("%s: args %v, want a tck run", f, args)
		}
		t.Setenv("JOB_COMPLETION_INDEX", "2")
		var given []string
		for _, a := range args[1:] {
			a = strings.ReplaceAll(a, "/etc/tck/fleet.yaml", fleet)
			a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "2")
			given = append(given, a)
		}
		expanded, err := fleetArgs(given)
		if err == nil {
			_, err = parseRun(expanded, io.Discard)
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestFleetFileBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("fleet: x\nshards:\n  - env: prod\n    targets: [\"broker/nats=${NO_SUCH_VAR_TCK}\"]\n    bogus: 1\n"), 0o644)
	fine := filepath.Join(dir, "fine.yaml")
	_ = os.WriteFile(fine, []byte("fleet: x\nshards:\n  - env: prod\n    targets: [\"broker/nats=${NO_SUCH_VAR_TCK}\"]\n"), 0o644)
	for _, args := range [][]string{
		{"run", "--fleet", bad, "--shard", "0"},                                   // an unknown field
		{"run", "--fleet", fine, "--shard", "0"},                                  // a variable not set
		{"run", "--fleet", fine, "--shard", "1"},                                  // no such shard
		{"run", "--fleet", fine, "--shard", "-1"},                                 // not a shard number
		{"run", "--fleet", fine},                                                  // no shard, no JOB_COMPLETION_INDEX
		{"run", "--fleet", fine, "--shard", "0", "--target", "eventstore/memory"}, // the shard sets it
		{"run", "--shard", "0"},                                                   // no fleet
		{"run", "--fleet", filepath.Join(dir, "none.yaml"), "--shard", "0"},
	} {
		code, stdout, stderr := tck(t, args...)
		if code != 3 || strings.Count(stderr, "\n") != 1 || stdout != "" || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 3 and one line", args, code, stdout, stderr)
		}
	}
}
