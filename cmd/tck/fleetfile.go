package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/onceproof/tck/internal/strictyaml"
)

// fleetFile is a platform team's fleet (docs/fleet.md): one shard per
// entry, each one `tck run` in one environment. Addresses may name
// environment variables (${NATS_URL}), which a Kubernetes Secret fills, so
// no credential is written in the file.
type fleetFile struct {
	Fleet  string       `fleet:"required" yaml:"fleet"`
	Shards []fleetShard `fleet:"required" yaml:"shards"`
}

type fleetShard struct {
	Env     string   `fleet:"required" yaml:"env"`
	Targets []string `fleet:"required" yaml:"targets"`
	Suites  []string `yaml:"suites"`
	Rules   []string `yaml:"rules"`
	Profile string   `yaml:"profile"`
	APIDesc string   `yaml:"apiDesc"`
	MaxWait string   `yaml:"maxWait"`
}

var fleetVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// fleetArgs replaces --fleet FILE [--shard N] in args by the flags of that
// shard (N defaults to the Indexed Job's JOB_COMPLETION_INDEX). Other flags
// (--quiet, --sonobuoy, --seed) stay; a flag the shard sets may not be
// given beside it.
func fleetArgs(args []string) ([]string, error) {
	var file, shard string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "fleet" && name != "shard") {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, usagef("flag needs an argument: -%s (see tck run -h)", name)
			}
			i++
			val = args[i]
		}
		if name == "fleet" {
			file = val
		} else {
			shard = val
		}
	}
	if file == "" {
		if shard != "" {
			return nil, usagef("--shard needs --fleet FILE")
		}
		return args, nil
	}
	if shard == "" {
		shard = os.Getenv("JOB_COMPLETION_INDEX")
		if shard == "" {
			return nil, usagef("--fleet %s needs --shard N (or the Indexed Job's JOB_COMPLETION_INDEX)", file)
		}
	}
	n, err := strconv.Atoi(shard)
	if err != nil || n < 0 {
		return nil, usagef("--shard %q: want a shard number from 0", shard)
	}
	data, err := strictyaml.ReadFile(file, "fleet file", strictyaml.MaxBytes)
	if err != nil {
		return nil, usagef("%v", err)
	}
	var f fleetFile
	if _, err := strictyaml.Decode(file, data, &f, strictyaml.Options{RequiredTag: "fleet", Empty: "empty fleet file"}); err != nil {
		return nil, usagef("%v", err)
	}
	if n >= len(f.Shards) {
		return nil, usagef("--shard %d: %s has %d shard(s), numbered from 0", n, file, len(f.Shards))
	}
	s := f.Shards[n]
	// The shard's own flags may not be given beside it: one would win
	// silently. --rule narrows a shard that names none.
	sets := map[string]bool{"target": true, "env": true, "suite": len(s.Suites) > 0, "rule": len(s.Rules) > 0,
		"profile": s.Profile != "", "api-desc": s.APIDesc != "", "max-wait": s.MaxWait != ""}
	for _, a := range rest {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && sets[name] {
			return nil, usagef("--%s beside --fleet: shard %d of %s sets it", name, n, file)
		}
	}
	out := append([]string{}, rest...)
	out = append(out, "--env", s.Env)
	for _, t := range s.Targets {
		var missing []string
		t = fleetVar.ReplaceAllStringFunc(t, func(m string) string {
			name := fleetVar.FindStringSubmatch(m)[1]
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return nil, usagef("%s shard %d: the target names ${%s}, which is not set in the environment (a Secret the Job should provide)", file, n, missing[0])
		}
		out = append(out, "--target", t)
	}
	for _, x := range s.Suites {
		out = append(out, "--suite", x)
	}
	for _, x := range s.Rules {
		out = append(out, "--rule", x)
	}
	for _, kv := range [][2]string{{"--profile", s.Profile}, {"--api-desc", s.APIDesc}, {"--max-wait", s.MaxWait}} {
		if kv[1] != "" {
			out = append(out, kv[0], kv[1])
		}
	}
	return out, nil
}
