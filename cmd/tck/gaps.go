package main

import (
	"fmt"
	"io"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/safetext"
)

// printGaps writes one line per target and missing mechanism under the
// conclusion: a "conformant" broker without producer de-dupe must still say
// who de-dupes (report.md's first screen says the same).
func printGaps(w io.Writer, rep *reports.Report) {
	for _, g := range rep.Gaps {
		fmt.Fprintf(w, "  %s\n", safetext.Text(g.Line()))
	}
}
