package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/onceproof/tck/internal/catalog"
)

var errHelp = errors.New("help shown")

// multi is a repeatable flag that also takes comma-separated values (suite
// names, rule ids); a value given twice counts once.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(*m, s) {
			*m = append(*m, s)
		}
	}
	return nil
}
func (m *multi) repeatable() {}

// addrs is a repeatable flag whose every value is one whole target: an
// address may hold commas (a Kafka bootstrap list, NATS servers), so it is
// never split.
type addrs []string

func (a *addrs) String() string { return strings.Join(*a, " ") }
func (a *addrs) Set(v string) error {
	*a = append(*a, v)
	return nil
}
func (a *addrs) repeatable() {}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("tck "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors become one line, usage is printed on -h only
	return fs
}

// parse parses args; -h prints the flags to stdout; anything else wrong is a
// usage error. Positional arguments are refused: every input is a flag.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := givenTwice(fs, args); err != nil {
		return err
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage of %s:\n", fs.Name())
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%v (see %s -h)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see %s -h)", fs.Arg(0), fs.Name())
	}
	return nil
}

// parseOperands is parse for a command that takes operands after its
// flags (tck report merge DIR...): -h names them; a flag after the first
// operand would be taken for one, so it is refused by name.
func parseOperands(fs *flag.FlagSet, args []string, stdout io.Writer, operands string) error {
	if err := givenTwice(fs, args); err != nil {
		return err
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage of %s: %s [flags] %s\n", fs.Name(), fs.Name(), operands)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usagef("%v (see %s -h)", err, fs.Name())
	}
	for _, a := range fs.Args() {
		if strings.HasPrefix(a, "-") {
			return usagef("%q after the first of %s: flags go before them (see %s -h)", a, operands, fs.Name())
		}
	}
	return nil
}

// givenTwice refuses a single-value flag given twice: the second would
// silently win (--out A --out B). It walks the flags as fs.Parse does and
// stops where Parse would; Parse reports anything malformed.
func givenTwice(fs *flag.FlagSet, args []string) error {
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return nil
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			return nil
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && (!ok || !b.IsBoolFlag()) {
			i++ // the value is the next argument
		}
		if _, ok := f.Value.(interface{ repeatable() }); ok {
			continue
		}
		if seen[name] {
			return usagef("--%s is given twice; it takes one value (see %s -h)", name, fs.Name())
		}
		seen[name] = true
	}
	return nil
}

func checkSuites(suites []string) error {
	for _, s := range suites {
		ok := false
		for _, known := range catalog.Suites() {
			ok = ok || s == known
		}
		if !ok {
			return usagef("unknown suite %q (suites: %s)", s, strings.Join(catalog.Suites(), ", "))
		}
	}
	return nil
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return usagef("unknown format %q (formats: %s)", format, strings.Join(allowed, ", "))
}
