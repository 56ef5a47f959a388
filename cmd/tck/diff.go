package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/onceproof/tck/internal/reports"
)

// cmdReportDiff is `tck report diff [--format text|json] OLD NEW`: what
// changed between two bundles (report folders or results.json files),
// regressions first. Exit 1 when a MUST rule regressed, so it can gate CI;
// 0 otherwise; 3 on bad input.
func cmdReportDiff(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("report diff")
	format := fs.String("format", "text", "text or json")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "Usage of tck report diff: tck report diff [--format text|json] OLD NEW\n  OLD, NEW: a report folder or its results.json")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%v (see tck report diff -h)", err)
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want two bundles, OLD and NEW (report folders or results.json files); got %d arguments", fs.NArg())
	}
	oldPath, newPath := fs.Arg(0), fs.Arg(1)
	old, err := reports.ReadBundle(oldPath)
	if err != nil {
		return usagef("OLD: %v", err)
	}
	cur, err := reports.ReadBundle(newPath)
	if err != nil {
		return usagef("NEW: %v", err)
	}
	d := reports.Compare(old, cur, oldPath, newPath)
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "->" and "<" stay readable
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		d.WriteText(stdout)
	}
	if code := d.ExitCode(); code != 0 {
		return exitError{code: code}
	}
	return nil
}
