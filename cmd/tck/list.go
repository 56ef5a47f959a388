package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/registry"
)

func cmdList(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("list")
	suite := fs.String("suite", "", "only this suite ("+strings.Join(catalog.Suites(), ", ")+")")
	format := fs.String("format", "text", "text, json or markdown (markdown is docs/RULES.md)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *suite != "" {
		if err := checkSuites([]string{*suite}); err != nil {
			return err
		}
	}
	if err := checkFormat(*format, "text", "json", "markdown"); err != nil {
		return err
	}
	rules := catalog.All(*suite)
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"schema": "onceproof.rules/v1", "rules": rules})
	case "markdown":
		if *suite != "" {
			return usagef("--format markdown renders the whole catalog; drop --suite")
		}
		_, err := io.WriteString(stdout, catalog.Markdown())
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tKIND\tTITLE\tNEEDS")
	for _, r := range rules {
		var needs []string
		for _, n := range r.Needs {
			needs = append(needs, string(n))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Kind, r.Title, strings.Join(needs, ","))
	}
	return tw.Flush()
}

func cmdTargets(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("targets")
	suite := fs.String("suite", "", "only this suite")
	mutants := fs.Bool("mutants", false, "include the deliberately broken targets of the self-test")
	format := fs.String("format", "text", "text or json")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *suite != "" {
		if err := checkSuites([]string{*suite}); err != nil {
			return err
		}
	}
	if err := checkFormat(*format, "text", "json"); err != nil {
		return err
	}
	kinds := registry.Targets().Kinds(*suite, *mutants)
	type row struct {
		Name      string   `json:"name"`
		Modes     []string `json:"modes"`
		Default   bool     `json:"default"`
		Reference bool     `json:"reference"`
		Mutant    bool     `json:"mutant"`
		Needs     string   `json:"needs"`
		Summary   string   `json:"summary"`
	}
	var rows []row
	for _, k := range kinds {
		var modes []string
		for _, m := range k.Modes {
			modes = append(modes, string(m))
		}
		rows = append(rows, row{k.Key(), modes, k.Default, k.Reference, k.Mutant, k.Needs, k.Summary})
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"targets": rows})
	}
	for _, r := range rows {
		name := r.Name
		if r.Default {
			name += " (default)"
		}
		modes := strings.ReplaceAll(strings.Join(r.Modes, ", "), "external", "URL")
		fmt.Fprintf(stdout, "%s\n    modes: %s (the first is used when no address is given)\n    %s\n    needs: %s\n", name, modes, r.Summary, r.Needs)
	}
	fmt.Fprintln(stdout, "\n(default) targets are run by `tck run` when no --target names their suite.")
	return nil
}
