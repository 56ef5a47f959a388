package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Files written into the run's folder.
const (
	FileJSON     = "results.json"
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
	FileJUnit    = "junit.xml"
	DirHistories = "histories"
)

// WriteAll renders every format into dir. Each file is written to a
// temporary name and renamed, so a reader never sees half a report.
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
	for name, data := range files {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// HistoryFile names the raw history of one rule on one target.
func HistoryFile(targetName, rule string) string {
	return unsafeChars.ReplaceAllString(targetName, "_") + "__" + rule + ".json"
}

func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Read loads a results.json written by WriteAll.
func Read(path string) (*Report, error) {
	data, err := os.ReadFile(path)
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
