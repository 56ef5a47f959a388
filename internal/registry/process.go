package registry

import (
	"context"
	"errors"
	"fmt"
	coembedded "github.com/onceproof/tck/suites/consumer/embedded"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/procs"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/consumer"
)

// serviceMutant is a mutant consumer service of examples/consumer-service:
// a separate small program with one defect.
type serviceMutant struct {
	name, summary string
	command       string // relative to the module root
	mustFail      []string
}

var serviceMutants = []serviceMutant{
	{"go-ack-first", "acks each delivery as it arrives, before its effects (Go)",
		"go run ./internal/mutants/coservices/go-ack-first", []string{"CO-2.2"}},
	{"go-no-claim", "sends the notification on every delivery, without a claim record (Go)",
		"go run ./internal/mutants/coservices/go-no-claim", []string{"CO-1.1", "CO-1.5", "CO-2.1"}},
	{"go-unversioned-index", "writes the index without an external version, so a stale replay wins (Go)",
		"go run ./internal/mutants/coservices/go-unversioned-index", []string{"CO-1.4"}},
	{"go-dedupe-by-message", "keys its processed row and notification claim by message id only (Go)",
		"go run ./internal/mutants/coservices/go-dedupe-by-message", []string{"CO-1.2"}},
	{"python-ack-before-notify", "acks after its index write and before its notification (Python)",
		"python3 internal/mutants/coservices/python-ack-before-notify/consumer.py", []string{"CO-2.2"}},
}

// services are the consumer/process rows: any service by command, the
// Python reference by name, and the mutant services.
func services() []row {
	rows := []row{{
		Kind: target.Kind{
			Suite: "consumer", Name: "process",
			Summary:    "a consumer service run as its own process (cmd:COMMAND) or container (container:IMAGE), killed with SIGKILL and restarted, over embedded NATS JetStream (or --broker broker/nats=URL, broker/redis, broker/kafka, broker/kafka-share) and HTTP sinks",
			Needs:      "the service's command (a `go run` is built once), or a local image and Docker",
			TakesImage: true, OverBroker: true,
		},
		modes: []mode{{target.Command, serviceStarted("", 0)}, {target.Container, serviceStarted("", 0)}},
	}, {
		Kind: target.Kind{
			Suite: "consumer", Name: "process-python",
			Summary: "the reference consumer service in Python (standard library only) as its own process",
			Needs:   "python3", OverBroker: true,
		},
		modes: []mode{{target.Embedded, serviceStarted("python3 examples/consumer-service/python/consumer.py", 0)}},
	}}
	for _, m := range serviceMutants {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "consumer", Name: "mutant-process-" + m.name,
				Summary: "mutant service: " + m.summary,
				Needs:   "the go toolchain or python3",
				Mutant:  true, MustFail: m.mustFail, OverBroker: true,
			},
			modes: []mode{{target.Embedded, serviceStarted(m.command, mutantAckWait)}},
		})
	}
	return rows
}

// mutantAckWait is the ack wait of the mutant services (the suite's
// default, 2 s, for every other service): the self-test runs a mutant only
// on the rules it is registered to fail, and a shorter ack wait only brings
// a redelivery sooner, which can add a duplicate to a broken service's run
// but never hide the defect it is registered for (a lost effect, a missing
// claim, an unversioned write). Each wait for a redelivery is 1 s shorter.
const mutantAckWait = time.Second

// serviceStarted starts embedded NATS and binds the service given by the
// ref's command (or fixed, relative to the module root) to the suite, with
// ackWait declared on its durable consumer (0: the suite's default).
func serviceStarted(fixed string, ackWait time.Duration) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		if ref.Mode() == target.Container {
			return containerStarted(ctx, ref)
		}
		line, dir := ref.Command(), ""
		if fixed != "" {
			root, err := moduleRoot()
			if err != nil {
				return nil, target.Unavailable(ref, err)
			}
			line, dir = fixed, root
		}
		argv, err := procs.Split(line)
		if err != nil || len(argv) == 0 {
			return nil, target.Unavailable(ref, fmt.Errorf("the command %q cannot be split: %v", line, err))
		}
		buildDir, rmBuild, err := kitDir("onceproof-service-build-")
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		args, built, err := procs.BuildGoRun(ctx, argv, buildDir, dir)
		if err != nil {
			_ = rmBuild()
			return nil, target.Unavailable(ref, err)
		}
		if !built {
			if _, err := lookPath(argv[0], dir); err != nil {
				_ = rmBuild()
				return nil, target.Unavailable(ref, err)
			}
		}
		svc := &consumer.Service{Args: args, Dir: dir, AckWait: ackWait}
		if fixed != "" {
			// The kit's own examples write nothing into the source tree,
			// and keep their state only in the data directory each rule
			// gives them, so three rules run against them at once.
			svc.Env = map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}
			svc.Concurrent = 3
		}
		how := "run as given"
		if built {
			how = "built once with go build, the binary run at every start"
		}
		return bindService(ctx, ref, svc, target.Redact(line), "command", target.Redact(line)+" ("+how+")", rmBuild)
	}
}

// bindService binds svc to the suite (each rule runs it over an embedded
// NATS server of its own); release is called at Stop (and on a failed
// start).
func bindService(ctx context.Context, ref target.Ref, svc *consumer.Service, address, what, how string, release func() error) (*target.Started, error) {
	svc.Keep = ref.Opts.Keep
	sb, brokerInfo, stopBroker, err := serviceBroker(ctx, ref)
	if err != nil {
		_ = release()
		return nil, target.Unavailable(ref, err)
	}
	svc.Broker = sb
	version, maxDeliver := "nats-server "+nats.Version+" (embedded, one per rule)", "20"
	switch sb.Kind {
	case coservice.BrokerNATS:
		version = sb.Name
	case coservice.BrokerRedis:
		version, maxDeliver = sb.Name, "none (Redis Streams has no max deliver)"
	case coservice.BrokerKafka:
		version, maxDeliver = sb.Name, "none (Kafka has no max deliver)"
	case coservice.BrokerKafkaShare:
		svc.AckWait, svc.MaxDeliver = sb.Lock, sb.DeliveryLimit
		version, maxDeliver = sb.Name, fmt.Sprintf("%d (group.share.delivery.count.limit: a record released or timed out this often is archived)", sb.DeliveryLimit)
	}
	stop := func() error { return errors.Join(release(), stopBroker()) }
	envelope := "the kit's (no profile consumer maps it)"
	if ref.Name == "process" {
		// Only a team's service takes the profile's shape: the kit's
		// own references and mutants read the documented envelope.
		env, from, err := ServiceEnvelope(ref.Opts.Profile)
		if err != nil {
			_ = stop()
			return nil, err
		}
		svc.Envelope = env
		if from != "" {
			envelope = "the profile's consumer " + from
		}
	}
	t := consumer.Target{
		Declared: co.Declared{Scopes: []string{co.ScopeIndex, co.ScopeNotify}},
		Seed:     ref.Opts.Seed,
		Service:  svc,
	}
	return &target.Started{
		Info: target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: address,
			Version: version,
			Config: map[string]string{
				what:           how,
				"broker":       brokerInfo,
				"scopes":       strings.Join(t.Declared.Scopes, ", "),
				"replicas":     "2, sharing the data directory",
				"ackWait":      ackWaitString(svc.AckWait) + " real (declared on the durable consumer; on Redis, the services' XAUTOCLAIM min-idle-time; on a share group, its lock)",
				"maxDeliver":   maxDeliver,
				"crashes":      "SIGKILL at sink calls (before / after applying) and acks (before / after forwarding), then a restart with the same configuration",
				"sinks":        "HTTP on loopback: a search index with external versions (409 when not newer), a notifier that counts every call",
				"dataDirs":     keepString(ref.Opts.Keep),
				"environment":  "see docs/consumer-service.md",
				"clock":        "real time (a black box runs on its own clock)",
				"eventPayload": coservice.Describe(coservice.Envelope(svc.Envelope)) + ": " + envelope,
			},
		},
		Rules:    func() target.RuleSet { return spec.Collect(consumer.Register, t, coembedded.NATS()) },
		Register: func() { consumer.Register(t, coembedded.NATS()) },
		Stop:     stop,
	}, nil
}

// ServiceEnvelope is the envelope a consumer/process service reads: the
// envelope of the profile's consumer, matched as the profile's only
// consumer (from names it); with no profile, or no consumer that maps
// one, the kit's envelope. A profile that declares several consumers and
// maps an envelope for any cannot say which one the service is: a usage
// error (exit 3).
func ServiceEnvelope(p *profile.Profile) (env consumer.Envelope, from string, err error) {
	if p == nil {
		return consumer.Envelope{}, "", nil
	}
	var mapped []string
	for _, c := range p.Consumers {
		if c.Envelope != nil {
			mapped = append(mapped, c.Name)
		}
	}
	switch {
	case len(mapped) == 0:
		return consumer.Envelope{}, "", nil
	case len(p.Consumers) > 1:
		return consumer.Envelope{}, "", fmt.Errorf("%s: consumer/process takes its event envelope from the profile's only consumer, and this profile declares %d consumers (an envelope for %s): give a profile with the service's consumer alone",
			p.File(), len(p.Consumers), strings.Join(mapped, ", "))
	}
	c := p.Consumers[0]
	env = consumer.Envelope(*c.Envelope)
	if err := coservice.CheckEnvelope(coservice.Envelope(env)); err != nil { // the loader checked it; a profile built in code may not be
		return consumer.Envelope{}, "", fmt.Errorf("%s: consumer %s: %v", p.File(), c.Name, err)
	}
	return env, c.Name, nil
}

func keepString(keep bool) string {
	if keep {
		return "kept (--keep): their paths are in each rule's evidence"
	}
	return "one per rule, removed at its end (--keep keeps them)"
}

// kitDir makes a temporary directory registered with leftovers.
func kitDir(pattern string) (string, func() error, error) {
	var dir string
	var untrack func()
	err := leftovers.Create(func() error {
		d, err := leftovers.MkdirTemp(pattern)
		if err != nil {
			return err
		}
		dir = d
		untrack = leftovers.Track("directory "+d, func() error { return os.RemoveAll(d) })
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	return dir, func() error {
		err := os.RemoveAll(dir)
		if err == nil {
			untrack()
		}
		return err
	}, nil
}

// moduleRoot finds the kit's module root from the working directory up:
// the fixed commands of the reference and mutant services are relative to
// it.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/onceproof/tck\n") {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("the example services are in the kit's source tree; run from inside it (no go.mod of github.com/onceproof/tck above the working directory)")
		}
		d = parent
	}
}

// lookPath checks that the command's program exists (a path relative to
// dir, or a name on PATH), so a typo is "unavailable" at once.
func lookPath(prog, dir string) (string, error) {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("the command's program %s: %w", prog, err)
		}
		return p, nil
	}
	return exec.LookPath(prog)
}

// ackWaitString is the ack wait a service's consumer declares (0: the
// suite's default, 2 s).
func ackWaitString(d time.Duration) string {
	if d <= 0 {
		d = 2 * time.Second
	}
	return d.String()
}
