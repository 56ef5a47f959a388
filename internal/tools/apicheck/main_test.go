package main

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckFindsTheLeaksAndOnlyThem(t *testing.T) {
	// The test packages live under internal/ themselves: judge their paths
	// from testdata on.
	internal := func(path string) bool {
		return isInternal(strings.TrimPrefix(path, "github.com/onceproof/tck/internal/tools/apicheck/testdata/"))
	}
	got, err := check(internal, "./testdata/pub")
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "github.com/onceproof/tck/internal/tools/apicheck/testdata/pub."
	const thing = "github.com/onceproof/tck/internal/tools/apicheck/testdata/internal/hidden.Thing"
	want := []string{pkg + "Holds: " + thing, pkg + "Returns: " + thing}
	if !slices.Equal(got, want) {
		t.Errorf("leaks\n%q\nwant\n%q", got, want)
	}
}
