package tck_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/poll"
)

const image = "onceproof/tck:local"

// TestImageHonoursSonobuoyWorker plays the Sonobuoy worker's part against
// the kit's image (`make images`): it starts the container with a results
// folder mounted where Sonobuoy mounts it, waits for the done file, and
// reads what it names: a tarball with the junit file the aggregator reads
// at its top and the kit's bundle beside it. The run's verdict (a mutant
// failing ES-1.1) is a result: the container exits 0.
func TestImageHonoursSonobuoyWorker(t *testing.T) {
	containers.Need(t, image)
	results := t.TempDir()
	if err := os.Chmod(results, 0o777); err != nil {
		t.Fatal(err)
	}
	name := "onceproof-tck-image-test-" + filepath.Base(results)
	// Detached, as Sonobuoy runs it: the worker only watches the folder.
	args := []string{"run", "-d", "--name", name, "--network", "none", "--user", "65534:65534"}
	for k, v := range containers.Labels("tck-image-test") {
		args = append(args, "--label", k+"="+v)
	}
	args = append(args, "-e", "SONOBUOY_RESULTS_DIR=/tmp/sonobuoy/results", "-v", results+":/tmp/sonobuoy/results",
		image, "run", "--quiet", "--target", "eventstore/mutant-lossy-bytes", "--rule", "ES-1.1")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var named []byte
	if err := poll.Until(ctx, 100*time.Millisecond, time.Second, func() (err error) {
		named, err = os.ReadFile(filepath.Join(results, "done"))
		return err
	}); err != nil {
		logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
		t.Fatalf("no done file in the results folder: %v\n%s", err, logs)
	}
	code, err := exec.Command("docker", "wait", name).Output()
	if err != nil || strings.TrimSpace(string(code)) != "0" {
		logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
		t.Errorf("the container exited %q (%v), want 0: a verdict is a result, not a crashed pod\n%s", code, err, logs)
	}
	inContainer := string(named)
	if !strings.HasPrefix(inContainer, "/tmp/sonobuoy/results/") {
		t.Fatalf("done names %q, not a file of the results folder", inContainer)
	}
	f, err := os.Open(filepath.Join(results, strings.TrimPrefix(inContainer, "/tmp/sonobuoy/results/")))
	if err != nil {
		t.Fatal(err)
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
		files[h.Name], _ = io.ReadAll(tr)
	}
	var suite struct {
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(files["junit.xml"], &suite); err != nil || suite.Failures != 1 {
		t.Errorf("junit.xml: %v, %d failures, want the one failed rule", err, suite.Failures)
	}
	for _, f := range []string{"tck/results.json", "tck/report.html", "tck/report.md"} {
		if len(files[f]) == 0 {
			t.Errorf("the bundle lacks %s", f)
		}
	}
}
