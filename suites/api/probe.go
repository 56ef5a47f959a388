package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"time"

	"github.com/onceproof/tck/internal/stall"
)

// probeRead is how long the probe's read may take to find the resource it
// created: a read view that lags behind the writes is judged by API-1.1.
const probeRead = 5 * time.Second

// Probe checks, before any rule runs, that a service answers and that its
// description fits it: a create with a fresh id (plain, with the template's
// payload) answers a declared creation status, and the read by that id
// finds it within probeRead (a read path that never finds a resource just
// created is a wrong description; a read that finds it late is API-1.1's
// to judge, not the probe's). The error names the description's field; the
// probe's resource stays.
//
// A probe that failed while the kit itself was paused or late is tried
// again with a fresh id (at most three times): the timeout was the kit's
// host's, and a start refused for it would blame a correct service (exit
// 4). A probe still failing says how late the kit was.
func Probe(ctx context.Context, base string, d *Description) error {
	return ProbeTLS(ctx, base, d, nil)
}

// ProbeTLS is Probe of an https:// service verified with tlsCfg (nil: the
// system's roots).
func ProbeTLS(ctx context.Context, base string, d *Description, tlsCfg *tls.Config) error {
	for try := 1; ; try++ {
		start := time.Now()
		err := probeOnce(ctx, base, d, tlsCfg)
		if err == nil || ctx.Err() != nil {
			return err
		}
		late := stall.Since(start)
		if !late.Paused() && late.Lag < time.Second {
			return err
		}
		if try == 3 {
			return fmt.Errorf("%w (%s)", err, late)
		}
	}
}

func probeOnce(ctx context.Context, base string, d *Description, tlsCfg *tls.Config) error {
	c := newClient(d, base, 1, false, tlsCfg)
	defer c.close()
	in := newValues(d, time.Now().UnixNano(), "probe").plainIntent("probe")
	a := c.create(ctx, "kit", in.id, in.scope, in.body)
	if a.Err != nil {
		return fmt.Errorf("%s does not answer: %v", base, a.Err)
	}
	if !d.IsCreated(a.Status) {
		return fmt.Errorf("%s: create.path %s %s: a create with a fresh id answered %s, not a declared creation status (create.created: %s)",
			d.Name(), d.Create.Method, d.Create.Path, a, statusList(d.Create.Created))
	}
	deadline := time.Now().Add(probeRead)
	for {
		rd := c.read(ctx, in.id, in.scope)
		if rd.Err != nil {
			return fmt.Errorf("%s does not answer the read: %v", base, rd.Err)
		}
		if slices.Contains(d.Read.Found, rd.Status) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: read.path %s: a resource created %s ago (id %s) still reads back as %s, not a declared found status (read.found: %s)",
				d.Name(), d.Read.Path, probeRead, in.id, rd, statusList(d.Read.Found))
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if d.List != nil {
		la := c.get(ctx, "kit", d.List.Path, in.id, in.scope)
		if la.Err != nil {
			return fmt.Errorf("%s does not answer the list: %v", base, la.Err)
		}
		if _, err := listItems(d, la); err != nil {
			return fmt.Errorf("%s: %v", d.Name(), err)
		}
	}
	return nil
}
