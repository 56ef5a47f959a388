# onceproof: the conformance kit. `make build` builds ./bin/tck; `make run`
# checks the embedded default targets with it; `make test` is what CI runs
# (see .ci/run for what it starts first).
GO ?= go

# The version `tck version` prints and every report records: the commit, with
# -dirty for uncommitted changes. Outside a git checkout it is empty and the
# binary falls back to the build info Go embeds.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
TCK_BIN ?= ./bin/tck

.PHONY: build run test check rules selftest images postgres redis bench bench-go race-rate clean-containers stress

build:
	$(GO) build -ldflags "-X main.Version=$(VERSION)" -o $(TCK_BIN) ./cmd/tck

# The built binary, not `go run`: `go run` turns every non-zero exit into 1,
# and the kit's exit codes (0-5, README) are what a CI script reads.
run: build
	$(TCK_BIN) run

# Five packages at a time on CI's 2 cores: the tests wait far more than they
# compute (a make test keeps the cores about 70 % busy at -p 4, its wall the
# packages' summed time over four), and a verdict must hold on a loaded host
# anyway (make stress runs the default run beside CPU burners), so a
# neighbouring test binary is load the kit has to stand, not noise to avoid. go test starts packages in the
# order they are named: SLOW_TESTS, every package over 20 s in a make test,
# longest first, go first, so that none of them starts late and runs on
# alone while the cores idle (./... then adds the rest, each package once;
# a package missing from the list only runs later). The race-power and
# benchmark figures, which do need quiet cores, are not part of this target
# (make race-rate, make bench).
SLOW_TESTS = ./cmd/tck ./internal/registry/processtest ./adapters/broker/rabbitmq ./internal/registry \
	./internal/browsertest ./internal/selftest ./internal/nemesis ./suites/broker ./suites/consumer \
	./internal/mutants/rabbitmutants ./internal/mutants/natsmutants ./adapters/broker/kafka \
	./suites/eventstore ./adapters/broker/redis ./examples/consumer ./adapters/eventstore/sqlite ./suites/api \
	./adapters/broker/nats ./internal/mutants/kafkamutants ./examples/eventstore ./internal/registry/ginkgotest
# -vet=off: go vet ./... has just run every analyser go test would run, on
# the same packages and their tests.
# -ldflags=-w: the test binaries without DWARF (no debugger reads them; a
# panic's trace does not need it) link in about a second less each, ~60 of them.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -p 5 -timeout 40m -vet=off -ldflags=-w $(SLOW_TESTS) ./...

# Hygiene CI checks before the tests: formatting, a tidy go.mod, staticcheck
# at a pinned version (through the module proxy), no exported identifier of a
# public package naming an internal type (apicheck), and the examples built as
# an author would build them, in a fresh module outside this repository.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./internal/tools/apicheck ./...
	scripts/check-examples.sh

# docs/RULES.md is generated from the catalog; a test fails when they differ.
rules: build
	$(TCK_BIN) list --format markdown > docs/RULES.md

selftest: build
	$(TCK_BIN) selftest

# Container images, built locally (the machine has no registry).
images:
	scripts/build-images.sh

# A PostgreSQL server on 127.0.0.1:5432 from Debian packages; prints the URL.
postgres:
	scripts/postgres-local.sh

# A redis-server on 127.0.0.1:16379 from Debian packages; prints TCK_REDIS_URL.
redis:
	scripts/redis-local.sh

# Wall time, longest rule, their ratio and peak RSS of the default run and
# the consumer suite (BENCH_SELFTEST=1 adds tck selftest; scripts/bench.sh).
# The Go benchmarks of single suites: make bench-go.
bench:
	scripts/bench.sh

bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./cmd/tck/ ./suites/...

# The catch rate of the ES-2 race rules against the check-then-write mutants
# (100 independent runs each), quiet and with two CPU burners; not part of
# `make test` (see scripts/race-power.sh).
race-rate:
	scripts/race-power.sh

# The default run N times beside CPU burners (STRESS_FLAGS="--burners 4
# --pauses 2" for four burners and two 20 s SIGSTOPs of the kit a run): false failures,
# unknowns, wall times and leftovers (see scripts/stress.sh).
stress:
	scripts/stress.sh $(STRESS_FLAGS) $(or $(N),10)
