package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/onceproof/tck/internal/strictyaml"
)

// Files written into the run's folder.
const (
	FileJSON     = "results.json"
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
	FileJUnit    = "junit.xml"
	DirHistories = "histories"
)

// WriteAll renders every format into dir, all or none: each file is
// written to a temporary sibling first, and only once every one is written
// completely are they renamed into place. On a failure (a full disk) the
// temporary files are removed, the folder keeps what it held before, and
// the error names the file that could not be written.
func WriteAll(dir string, r *Report) error {
	if err := os.MkdirAll(filepath.Join(dir, DirHistories), 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	var md, html, junit bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		return err
	}
	if err := HTML(&html, r); err != nil {
		return err
	}
	if err := JUnit(&junit, r); err != nil {
		return err
	}
	files := map[string][]byte{
		FileJSON: append(js, '\n'), FileMarkdown: md.Bytes(), FileHTML: html.Bytes(), FileJUnit: junit.Bytes(),
	}
	for _, res := range r.Results {
		if res.Evidence == nil || (len(res.Evidence.Timeline) == 0 && len(res.Evidence.Minimal) == 0) {
			continue
		}
		h, err := json.MarshalIndent(map[string]any{"rule": res.Rule, "target": res.Target, "verdict": res.Verdict,
			"timeline": res.Evidence.Timeline, "minimal": res.Evidence.Minimal}, "", " ")
		if err != nil {
			return err
		}
		files[filepath.Join(DirHistories, HistoryFile(res.Target, res.Rule))] = h
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	tmps := map[string]string{}
	discard := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	for _, name := range names {
		tmp, err := writeTemp(filepath.Join(dir, name), files[name])
		if err != nil {
			discard()
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
		tmps[name] = tmp
	}
	for _, name := range names {
		if err := os.Rename(tmps[name], filepath.Join(dir, name)); err != nil {
			discard()
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
		delete(tmps, name)
	}
	return nil
}

// RemoveTemps removes the temporary files an interrupted WriteAll left.
func RemoveTemps(dir string) {
	for _, d := range []string{dir, filepath.Join(dir, DirHistories)} {
		tmps, _ := filepath.Glob(filepath.Join(d, tmpPattern))
		for _, t := range tmps {
			os.Remove(t)
		}
	}
}

const tmpPattern = ".tmp-*"

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// HistoryFile names the raw history of one rule on one target.
func HistoryFile(targetName, rule string) string {
	return unsafeChars.ReplaceAllString(targetName, "_") + "__" + rule + ".json"
}

// writeTemp writes data to a new temporary file beside path and returns
// its name.
func writeTemp(path string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), tmpPattern)
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// MaxResultsBytes bounds a results.json Read takes: a full run's is a few
// MB (timelines included), so this leaves ample room and still refuses
// /dev/zero's worth of input before the decode.
const MaxResultsBytes = 64 << 20

// Read loads a results.json written by WriteAll. The path must be a
// regular file of at most MaxResultsBytes (strictyaml.ReadFile: a FIFO or a
// device is refused before it is read).
func Read(path string) (*Report, error) {
	data, err := strictyaml.ReadFile(path, "results.json", MaxResultsBytes)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %v", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, this kit reads %q", path, r.Schema, Schema)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	// The summary is derived, never trusted: recompute it from the results.
	r.Finish()
	return &r, nil
}
