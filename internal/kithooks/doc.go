// Package kithooks holds what the kit gives a suite's rules beyond an
// author's Target: faults, a private server, an inspector, a declared
// profile, the horizon of tck run --max-wait. internal/registry fills them
// and passes them with spec.With; the suite reads them with spec.HooksOf.
// Being internal, no author can set them, so a suite's public Target holds
// the author's fields alone.
package kithooks
