// Package target names the things the kit checks and knows how to get them:
// a target is an adapter plus the store, broker or consumer it talks to,
// reached embedded (in this process), in a container, or at a URL.
//
// On the command line a target is SUITE/NAME[=ADDRESS], ADDRESS being
// "embedded", "container" or a URL.
package target

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/tlsmat"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Mode is how the target's backend is reached.
type Mode string

const (
	Embedded  Mode = "embedded"
	Container Mode = "container"
	External  Mode = "external"
	// Command: the target is a program the kit starts itself, given as
	// "cmd:COMMAND" (a consumer service, an HTTP API); Command() is COMMAND.
	Command Mode = "command"
)

// CommandPrefix starts the address of a Command target.
const CommandPrefix = "cmd:"

// ImagePrefix starts a Container address naming its image
// ("container:IMAGE"), for a kind that takes one (Kind.TakesImage).
const ImagePrefix = "container:"

// Ref is a parsed --target value.
type Ref struct {
	Suite   string
	Name    string
	Address string // "embedded", "container" or a URL; "" means the kind's default
	// Opts are the run's settings for the suite (not part of the address).
	Opts Options
}

// Options are run-wide settings a started target hands to its suite.
type Options struct {
	// Seed seeds every randomized rule (0: each rule picks one and records
	// it in its evidence); `tck run --seed` re-runs a recorded one.
	Seed int64
	// RestartWindow is the de-dupe window BR-1.7 tests across a broker
	// restart (0: chosen from the restart time the rule measures).
	RestartWindow time.Duration
	// Keep keeps what a target made for debugging (a consumer service's
	// data directories) instead of removing it at the end (tck run --keep).
	Keep bool
	// Profile, when set, is the team's declared pipeline (tck run
	// --profile): a broker target certifies its declared streams.
	Profile *profile.Profile
	// MaxWait bounds how long a rule may wait by definition (tck run
	// --max-wait); 0: the suite's own budget.
	MaxWait time.Duration
	// Progress, when set, receives progress lines of long waits.
	Progress func(line string)
	// APIDesc is the endpoint description file of an api/http target (tck
	// run --api-desc); "" takes the profile's http section or the default.
	APIDesc string
	// Broker is the broker target a consumer target reads from (tck run
	// --broker SUITE/NAME[=ADDRESS]); "" is the consumer target's own.
	Broker string
	// TLS is the trust material for every external target of the run
	// (tck run --tls-ca, --tls-cert, --tls-key, --tls-server-name;
	// docs/tls.md): paths, never the secrets themselves.
	TLS tlsmat.Material
}

// Key is SUITE/NAME.
func (r Ref) Key() string { return r.Suite + "/" + r.Name }

// String is the redacted form, safe for any output.
func (r Ref) String() string {
	if r.Address == "" {
		return r.Key()
	}
	return r.Key() + "=" + Redact(r.Address)
}

// Mode derives the mode from the address.
func (r Ref) Mode() Mode {
	switch r.Address {
	case string(Embedded):
		return Embedded
	case string(Container):
		return Container
	}
	if strings.HasPrefix(r.Address, CommandPrefix) {
		return Command
	}
	if strings.HasPrefix(r.Address, ImagePrefix) {
		return Container
	}
	return External
}

// Image is the image of a "container:IMAGE" address ("" otherwise).
func (r Ref) Image() string {
	if !strings.HasPrefix(r.Address, ImagePrefix) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(r.Address, ImagePrefix))
}

// Command is the command line of a Command target ("" for other modes).
func (r Ref) Command() string {
	if r.Mode() != Command {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(r.Address, CommandPrefix))
}

// Parse reads SUITE/NAME[=ADDRESS].
func Parse(s string) (Ref, error) {
	key, addr, _ := strings.Cut(s, "=")
	suite, name, ok := strings.Cut(key, "/")
	if !ok || suite == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("target %q: want SUITE/NAME[=ADDRESS], e.g. eventstore/sqlite or broker/nats=nats://127.0.0.1:4222", Redact(s))
	}
	if _, _, hasEq := strings.Cut(s, "="); hasEq && addr == "" {
		return Ref{}, fmt.Errorf("target %q: empty address after '='", key)
	}
	return Ref{Suite: suite, Name: name, Address: addr}, nil
}

// Redact removes secrets from a URL or any text holding URLs.
func Redact(s string) string { return redact.Text(s) }

// Info describes a started target in the report.
type Info struct {
	Name     string            `json:"name"` // SUITE/NAME
	Suite    string            `json:"suite"`
	Mode     Mode              `json:"mode"`
	Address  string            `json:"address"` // redacted
	Version  string            `json:"version,omitempty"`
	Emulator bool              `json:"emulator,omitempty"`
	Mutant   bool              `json:"mutant,omitempty"`
	Config   map[string]string `json:"config,omitempty"` // what the target declares
	// Server is the server's settings as the kit read them from it (each
	// says how, or that a client cannot read it), apart from Config.
	Server map[string]string `json:"server,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

// Started is a running target. Rules builds the suite's rules against it
// for the kit's engine (tck run, tck selftest); Register registers the same
// rules as Ginkgo specs (the suite package's exported Register, bound to
// this target: the kit's own tests run the suites through it too); Stop
// releases everything the start created.
type Started struct {
	Info     Info
	Rules    func() RuleSet
	Register func()
	Stop     func() error
	// Broker, for a broker target, opens a handle on it: the consumer
	// suite reads from it (tck run --broker).
	Broker func(ctx context.Context) (mq.Broker, error)
}

// Kind is one adapter the kit knows.
type Kind struct {
	Suite   string
	Name    string
	Summary string
	Modes   []Mode // the modes it supports; the first is the default
	Needs   string // what it needs to run, for `tck targets`
	Mutant  bool   // deliberately broken, for the self-test only
	// MustFail lists, for a mutant, the rule ids the self-test asserts it
	// fails (it may fail more).
	MustFail []string
	Default  bool // run by `tck run` when no --target names this suite
	// Reference marks a reference target of the suite: the self-test
	// requires it to pass every rule that applies. A suite may have one
	// per backend its mutants sit in front of (broker: NATS, Kafka,
	// RabbitMQ, and the Kafka and Redis certification references).
	Reference bool
	// OverBroker marks a consumer kind that can read from any broker
	// target (tck run --broker; a consumer service only from those
	// registry.ServiceBrokerSupported accepts).
	OverBroker bool
	// AddressEnv, for a kind whose first mode is External, names the
	// variable holding its default URL (broker/redis: TCK_REDIS_URL). A
	// target named without an address takes it from there; with the
	// variable unset it is left empty and Start decides (broker/redis
	// starts a redis-server of its own from PATH, or reports the target
	// unavailable, exit 4, naming the variable).
	AddressEnv string
	// TakesImage: the kind's Container mode is "container:IMAGE" (a
	// consumer service's image), not the kit's own image.
	TakesImage bool
	Start      func(ctx context.Context, ref Ref) (*Started, error)
}

// Key is SUITE/NAME.
func (k Kind) Key() string { return k.Suite + "/" + k.Name }

// Supports reports whether the kind can be reached in mode m.
func (k Kind) Supports(m Mode) bool {
	for _, x := range k.Modes {
		if x == m {
			return true
		}
	}
	return false
}

// ErrUnavailable marks a target that could not be started or reached (exit 4).
var ErrUnavailable = errors.New("target unavailable")

// Unavailable wraps err as ErrUnavailable, naming the target, with secrets
// redacted.
func Unavailable(ref Ref, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrUnavailable, ref, redact.Error(err, redact.Secrets(ref.Address)...))
}

// Registry holds the known kinds.
type Registry struct {
	mu    sync.Mutex
	kinds map[string]Kind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]Kind{}} }

// Add registers a kind; a duplicate key panics.
func (r *Registry) Add(k Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[k.Key()]; dup {
		panic("target: duplicate kind " + k.Key())
	}
	if len(k.Modes) == 0 || k.Start == nil {
		panic("target: kind " + k.Key() + " needs modes and Start")
	}
	r.kinds[k.Key()] = k
}

// Get returns the kind for SUITE/NAME.
func (r *Registry) Get(key string) (Kind, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.kinds[key]
	return k, ok
}

// Kinds lists the kinds of a suite ("" for all), mutants included when asked.
func (r *Registry) Kinds(suite string, mutants bool) []Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Kind
	for _, k := range r.kinds {
		if (suite == "" || k.Suite == suite) && (mutants || !k.Mutant) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Resolve checks a ref against the registry and fills in the default mode.
func (r *Registry) Resolve(ref Ref) (Kind, Ref, error) {
	k, ok := r.Get(ref.Key())
	if !ok {
		var names []string
		for _, k := range r.Kinds(ref.Suite, false) {
			names = append(names, k.Key())
		}
		if len(names) == 0 {
			return Kind{}, ref, fmt.Errorf("unknown target %s (see `tck targets`)", ref.Key())
		}
		return Kind{}, ref, fmt.Errorf("unknown target %s; known: %s", ref.Key(), strings.Join(names, ", "))
	}
	if ref.Address == "" && k.Modes[0] == External && k.AddressEnv != "" {
		if ref.Address = os.Getenv(k.AddressEnv); ref.Address == "" {
			return k, ref, nil
		}
	}
	if ref.Address == "" {
		if k.Modes[0] == External {
			return Kind{}, ref, fmt.Errorf("target %s needs an address: %s=URL%s", ref.Key(), ref.Key(), containerHint(k))
		}
		if k.Modes[0] == Command {
			return Kind{}, ref, fmt.Errorf("target %s needs a command: %s=cmd:COMMAND", ref.Key(), ref.Key())
		}
		ref.Address = string(k.Modes[0])
	}
	if !k.Supports(ref.Mode()) {
		return Kind{}, ref, fmt.Errorf("target %s cannot be reached as %s (it supports: %s)", ref.Key(), ref.Mode(), modes(k))
	}
	if ref.Mode() == Command && ref.Command() == "" {
		return Kind{}, ref, fmt.Errorf("target %s: empty command after %s", ref.Key(), CommandPrefix)
	}
	if ref.Mode() == Container && k.TakesImage != (ref.Image() != "") {
		if k.TakesImage {
			return Kind{}, ref, fmt.Errorf("target %s needs an image: %s=%sIMAGE", ref.Key(), ref.Key(), ImagePrefix)
		}
		return Kind{}, ref, fmt.Errorf("target %s takes no image: %s=container", ref.Key(), ref.Key())
	}
	if ref.Mode() == External {
		if _, err := url.Parse(ref.Address); err != nil || !strings.Contains(ref.Address, "://") {
			shown := Redact(ref.Address)
			if !strings.Contains(ref.Address, "://") {
				shown = redact.Opaque(ref.Address) // no structure to go by: it may be a credential
			}
			return Kind{}, ref, fmt.Errorf("target %s: address %q is neither embedded, container nor a URL (SCHEME://HOST...)", ref.Key(), shown)
		}
	}
	return k, ref, nil
}

func containerHint(k Kind) string {
	if k.Supports(Container) {
		return " or " + k.Key() + "=container"
	}
	return ""
}

func modes(k Kind) string {
	s := make([]string, len(k.Modes))
	for i, m := range k.Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// RuleSet is a suite's rules bound to one target, as the engine runs them
// (spec.Set).
type RuleSet interface {
	Run(ctx context.Context, o RunOptions) []verdict.Result
}

// RunOptions tunes one run of a RuleSet.
type RunOptions struct {
	// Target labels every result.
	Target string
	// Rules, when not empty, limits the run to these ids; the others are
	// skipped ("filtered out by --rule").
	Rules []string
	// Progress, when set, is called as each rule finishes.
	Progress func(verdict.Result)
	// Note, when set, receives a long rule's progress lines (R.Progress).
	Note func(line string)
}
