package api

import (
	"context"
	"fmt"
	"slices"
)

// Probe checks, before any rule runs, that a service answers and that its
// description fits it: a create with a fresh id answers a declared creation
// status, and the read by that id finds it (a read path that answers 404
// for a resource just created is a wrong description, not a rule failure).
// The error names the description's field; the probe's resource stays.
func Probe(ctx context.Context, base string, d *Description) error {
	c := newClient(d, base, 1, false)
	defer c.close()
	in := newIntent(d, "probe")
	a := c.create(ctx, "kit", in.id, in.scope, in.body)
	if a.Err != nil {
		return fmt.Errorf("%s does not answer: %v", base, a.Err)
	}
	if !d.IsCreated(a.Status) {
		return fmt.Errorf("%s: create.path %s %s: a create with a fresh id answered %s, not a declared creation status (create.created: %s)",
			d.Name(), d.Create.Method, d.Create.Path, a, statusList(d.Create.Created))
	}
	rd := c.read(ctx, in.id, in.scope)
	if rd.Err != nil {
		return fmt.Errorf("%s does not answer the read: %v", base, rd.Err)
	}
	if !slices.Contains(d.Read.Found, rd.Status) {
		return fmt.Errorf("%s: read.path %s: a resource just created (id %s) reads back as %s, not a declared found status (read.found: %s)",
			d.Name(), d.Read.Path, in.id, rd, statusList(d.Read.Found))
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
