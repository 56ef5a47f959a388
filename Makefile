# onceproof: the conformance kit. `make run` checks the embedded default
# targets; `make test` is what CI runs (see .ci/run for what it starts first).
GO ?= go

.PHONY: run test rules selftest images postgres bench race-rate clean-containers

run:
	$(GO) run ./cmd/tck run

# Packages run one at a time (-p 1): several suites measure timing windows and
# races on a 2-core machine, and a neighbouring test binary stealing a core
# would make their figures noisy.
test:
	$(GO) vet ./...
	$(GO) test -count=1 -p 1 -timeout 40m ./...

# docs/RULES.md is generated from the catalog; a test fails when they differ.
rules:
	$(GO) run ./cmd/tck list --format markdown > docs/RULES.md

selftest:
	$(GO) run ./cmd/tck selftest

# Container images, built locally (the machine has no registry).
images:
	scripts/build-images.sh

# A PostgreSQL server on 127.0.0.1:5432 from Debian packages; prints the URL.
postgres:
	scripts/postgres-local.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./cmd/tck/ ./suites/...

# The detection rate of the ES-2 race rules against the check-then-write
# mutants (100 independent runs each).
race-rate:
	$(GO) test -count=1 -run TestRaceRulesCatchCheckThenWrite -v ./suites/eventstore/
