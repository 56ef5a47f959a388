#!/usr/bin/env bash
# Runs the fault matrix (internal/nemesis: the real BR-2.9, BR-3.1 and ES-2
# rules with the nemesis as their Disrupt hook, on NATS and PostgreSQL
# containers) and prints the "what survived" table of docs/containers.md
# from the rules' evidence. Needs Docker and the images (`make images`).
# One package, its tests one after another (-p 1): the machine is small and the
# figures are timings.
#
#   scripts/fault-matrix.sh              # the whole matrix, a few minutes
#   scripts/fault-matrix.sh TestNATSQueueUnderFault/kill-start   # one case
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-'TestNATS|TestPostgres'}
export TESTCONTAINERS_RYUK_DISABLED=true
# every race rule on the phantom-success mutant, not only ES-2.5 (make test)
export TCK_FAULT_MATRIX=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -count=1 -p 1 -timeout 30m -run "$run" -v ./internal/nemesis/ >"$log" 2>&1 || status=$?
echo '| rule, fault | verdict | acknowledged (or trials) | lost: acked, never delivered | acked and stored after the restart | notes |'
echo '| --- | --- | --- | --- | --- | --- |'
sed -n 's/^ *[a-z_]*_test\.go:[0-9]*: table: //p' "$log"
if [ "$status" -ne 0 ]; then
	grep -E '^\s*(--- FAIL|FAIL)' "$log" >&2 || true
	echo "fault-matrix: go test failed (exit $status); full log kept in $log.kept" >&2
	cp "$log" "$log.kept"
fi
exit "$status"
