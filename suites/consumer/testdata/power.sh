#!/bin/sh
# power.sh MUTANT RULE [RUNS] [BURNERS]
#
# Measures how often RULE catches MUTANT (internal/mutants/comutants) in RUNS
# runs (default 20), with BURNERS busy-loop processes (default 2) loading the
# CPUs as a shared machine would. Each burner is started here and killed by
# its own pid. Run from the module root:
#
#	sh suites/consumer/testdata/power.sh racy-claim CO-1.5 20 2
#	sh suites/consumer/testdata/power.sh mark-then-effect CO-2.5 10 0
set -eu
mutant=$1 rule=$2 runs=${3:-20} burners=${4:-2}
pids=""
i=0
while [ "$i" -lt "$burners" ]; do
	timeout 300 sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
out=$(ONCEPROOF_POWER="$mutant/$rule" ONCEPROOF_POWER_RUNS="$runs" go test -count=1 -p 1 -timeout 30m -run '^TestPower$' -v ./internal/mutants/comutants 2>&1 || true)
caught=$(printf '%s\n' "$out" | grep -c "POWER $mutant $rule caught" || true)
total=$(printf '%s\n' "$out" | grep -c "POWER $mutant $rule " || true)
printf '%s\n' "$out" | grep "POWER " | sed 's/^ *//'
echo "$mutant $rule: caught in $caught of $total runs ($burners CPU burners)"
