#!/usr/bin/env bash
# check-examples.sh: builds and tests the examples the way an author uses
# them: each copied into a fresh module outside this repository, with only a
# `replace` pointing at the kit (vet and a build of the tests; make test runs
# them in the repository). Then, in the event-store copy:
#   - `go test -run 'TestX/ES-1.5' -v` runs exactly one rule;
#   - a store that leaves a rule undecided makes `go test` fail.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tck-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod

log() { printf 'check-examples: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

copy() { # copy NAME: the example as a module of its own; prints its folder
	local name=$1 dir=$work/$1
	mkdir -p "$dir"
	cp "$root/examples/$name"/*.go "$dir/"
	cat >"$dir/go.mod" <<MOD
module example.com/$name

go 1.26

require github.com/onceproof/tck v0.0.0

replace github.com/onceproof/tck => $root
MOD
	(cd "$dir" && go mod tidy >/dev/null 2>&1 || go mod tidy)
	echo "$dir"
}

for name in eventstore consumer api; do
	dir=$(copy "$name")
	pkg=$(cd "$dir" && go list -f '{{.Name}}' .)
	[[ $pkg == "$name" ]] || die "examples/$name: package $pkg, want $name (the folder's name)"
	# Built, vetted and linked as an author's module; their tests run in
	# make test (./examples/...), so here only the two runs below execute.
	log "examples/$name: go vet and go test -run '^\$' (build only) in a fresh module"
	(cd "$dir" && go vet ./... && go test -count=1 -run '^$' ./... >/dev/null) || die "examples/$name fails to build in a fresh module"
done

dir=$work/eventstore
# The test that calls eventstore.Check: the first Test function of a file that does.
file=$(grep -l 'eventstore\.Check(' "$dir"/*_test.go | head -1)
[[ -n $file ]] || die "examples/eventstore: no test calls eventstore.Check"
test=$(grep -o '^func \(Test[A-Za-z0-9_]*\)(t \*testing.T)' "$file" | head -1 | sed 's/^func \(Test[A-Za-z0-9_]*\).*/\1/')
log "examples/eventstore: go test -run '$test/ES-1.5' -v runs one rule"
out=$(cd "$dir" && go test -count=1 -run "$test/ES-1.5" -v .)
runs=$(grep -c "^=== RUN   $test/" <<<"$out" || true)
[[ $runs == 1 ]] || die "-run '$test/ES-1.5' ran $runs rules, want 1:"$'\n'"$out"
grep -q -- "--- PASS: $test/ES-1.5" <<<"$out" || die "ES-1.5 did not pass:"$'\n'"$out"

log "examples/eventstore: a store that leaves a rule undecided fails go test"
cat >"$dir/undecided_test.go" <<'GO'
package eventstore

import (
	"context"
	"testing"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/suites/eventstore"
)

// hanging never answers, not even to its caller's deadline: the kit cannot
// decide, and says so.
type hanging struct{}

func (hanging) Append(context.Context, es.Stream) error { select {} }
func (hanging) Load(context.Context, es.AggregateID, int, int) ([]es.Stream, error) {
	select {}
}
func (hanging) RequestIDExists(context.Context, es.AggregateID, string) (bool, error) {
	select {}
}
func (hanging) Close() error { return nil }

func TestUndecided(t *testing.T) {
	eventstore.Check(t, eventstore.Target{
		Open:    func(context.Context) (es.EventStore, error) { return hanging{}, nil },
		Timeout: 300 * time.Millisecond,
	})
}
GO
if out=$(cd "$dir" && go test -count=1 -run 'TestUndecided/ES-1.1' -v . 2>&1); then
	die "go test passed with an undecided rule:"$'\n'"$out"
fi
grep -q "unknown" <<<"$out" || die "the failure does not say unknown:"$'\n'"$out"
log "ok"
