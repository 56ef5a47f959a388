package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/onceproof/tck/internal/catalog"
)

var errHelp = errors.New("help shown")

// multi is a repeatable flag that also takes comma-separated values.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("tck "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors become one line, usage is printed on -h only
	return fs
}

// parse parses args; -h prints the flags to stdout; anything else wrong is a
// usage error. Positional arguments are refused: every input is a flag.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
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
