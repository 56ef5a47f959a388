package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestPrintGaps: the closing summary has one line per target and missing
// mechanism (BR-1.1 and BR-1.6 share one), none for a capability that
// leaves nothing to anyone (fault-proxy, pending-list).
func TestPrintGaps(t *testing.T) {
	na := func(id string, missing ...catalog.Capability) verdict.Result {
		var ms []string
		for _, c := range missing {
			ms = append(ms, string(c))
		}
		return verdict.Result{Rule: id, Suite: "broker", Target: "broker/redis", Level: "MUST", Verdict: verdict.NotApplicable, Missing: ms}
	}
	rep := &reports.Report{Results: []verdict.Result{
		na("BR-1.1", catalog.CapBrokerDedupe),
		na("BR-1.6", catalog.CapBrokerDedupe, catalog.CapBrokerFaultProxy),
		na("BR-2.6", catalog.CapBrokerMaxDeliver),
		na("BR-4.1", catalog.CapBrokerPendingList),
	}}
	rep.Finish()
	var out bytes.Buffer
	printGaps(&out, rep)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "  not protected on broker/redis: no producer de-dupe (BR-1.1, BR-1.6 not applicable): ") ||
		!strings.Contains(lines[0], "every consumer de-dupes") ||
		!strings.HasPrefix(lines[1], "  not protected on broker/redis: no max-deliver or dead letter (BR-2.6 not applicable): ") {
		t.Errorf("closing lines:\n%s", out.String())
	}

	rep = &reports.Report{Results: []verdict.Result{na("BR-4.1", catalog.CapBrokerPendingList), {Rule: "BR-1.1", Target: "broker/nats", Level: "MUST", Verdict: verdict.Pass}}}
	rep.Finish()
	out.Reset()
	printGaps(&out, rep)
	if out.Len() != 0 {
		t.Errorf("lines for a target where every mechanism applies:\n%s", out.String())
	}
}
