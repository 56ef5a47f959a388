package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/target"
)

// planProfile is `tck plan --profile FILE`: the seed 002 analysis of a
// declared pipeline, nothing started. Exit 0 with no hazard, 1 with any,
// 3 on a malformed profile (file:line: field: what is wrong).
// With --out it also writes the analysis as a report folder.
func planProfile(ctx context.Context, file, format, out, command string, stdout io.Writer) error {
	if err := checkFormat(format, "text", "json"); err != nil {
		return err
	}
	p, err := profile.Load(file)
	if err != nil {
		return usagef("%v", err)
	}
	plan := profile.Analyze(p)
	if ctx.Err() != nil {
		return interrupted()
	}
	if out != "" {
		now := time.Now()
		dir, unlock, err := claimOutDir(out, now)
		if err != nil {
			return err
		}
		defer unlock()
		rep := reports.PlanReport(&plan, reports.Kit{Name: "onceproof", Version: kitVersion(), GoVersion: runtime.Version()}, command, now)
		if err := reports.WriteAll(dir, rep); err != nil {
			return notWritten("analysis", err)
		}
		defer fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, reports.FileHTML))
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "->" and "<" stay readable
		if err := enc.Encode(plan); err != nil {
			return err
		}
	} else {
		plan.WriteText(stdout)
	}
	if len(plan.Hazards) > 0 {
		return exitError{code: reports.ExitMustFailed}
	}
	return nil
}

// loadRunProfile is `tck run --profile FILE`: the profile loaded and
// analysed (its plan goes into the report), checked against the run's
// broker targets before anything starts: a malformed profile, or one with
// nothing to certify on a broker/nats target, is a usage error (exit 3).
func loadRunProfile(file string, p plan) (*profile.Profile, *profile.Plan, error) {
	if file == "" {
		return nil, nil, nil
	}
	prof, err := profile.Load(file)
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	for _, t := range p.targets {
		if natsKind(t.kind.Key()) {
			if _, err := registry.DeclaredNATS(prof, t.ref.Mode() == target.External); err != nil {
				return nil, nil, usagef("%v", err)
			}
		}
		if t.kind.Key() == "broker/redis" {
			if _, err := registry.DeclaredRedis(prof, true); err != nil {
				return nil, nil, usagef("%v", err)
			}
		}
		if t.kind.Key() == "broker/kafka" {
			if _, err := registry.DeclaredKafka(prof, true); err != nil {
				return nil, nil, usagef("%v", err)
			}
		}
	}
	pl := profile.Analyze(prof)
	return prof, &pl, nil
}

// natsKind says whether a target kind is NATS (broker/nats, the cluster,
// the NATS mutants): the kinds that certify a profile's NATS streams.
func natsKind(key string) bool {
	if strings.HasPrefix(key, "broker/mutant-redis-") || strings.HasPrefix(key, "broker/mutant-kafka-") {
		return false
	}
	return strings.HasPrefix(key, "broker/nats") || strings.HasPrefix(key, "broker/mutant-")
}
