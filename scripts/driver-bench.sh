#!/bin/sh
# driver-bench.sh: the overhead of the event-store driver protocol. Runs the
# whole eventstore suite with the built tck, once through the Go SQLite
# adapter in the kit's process (eventstore/sqlite: a temporary SQLite file,
# WAL) and once through the Python reference driver adapter
# (examples/eventstore-driver/python: two processes over a temporary SQLite
# file, WAL), and prints per target: rules per second (the whole suite, and
# the ES-1 rules alone), ES-2 contended trials per second, and whether each
# ES-2 race rule reached its power target. docs/eventstore-driver.md quotes
# its output.
#
#   scripts/driver-bench.sh               # one run each, this machine as it is
#   RUNS=3 BURNERS=2 scripts/driver-bench.sh   # three runs each, two CPU burners alongside
#   JAVA=1 scripts/driver-bench.sh        # also the Java reference over $TCK_POSTGRES_URL
#
# The burners are bounded (timeout 600) and stopped however the script ends.
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1}
BURNERS=${BURNERS:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tck-driver-bench.XXXXXX")
burners=""
cleanup() {
	for p in $burners; do kill "$p" 2>/dev/null || true; done
	for p in $burners; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

make build >/dev/null

i=0
while [ "$i" -lt "$BURNERS" ]; do
	timeout 600 sh -c 'while :; do :; done' &
	burners="$burners $!"
	i=$((i + 1))
done

run() { # label target
	n=1
	while [ "$n" -le "$RUNS" ]; do
		out="$tmp/$1-$n"
		./bin/tck run --quiet --suite eventstore --target "$2" --out "$out" >"$tmp/$1-$n.log" 2>&1 || true
		[ -f "$out/results.json" ] || {
			cat "$tmp/$1-$n.log"
			echo "driver-bench: $1 wrote no results" >&2
			exit 1
		}
		n=$((n + 1))
	done
}

run go-sqlite eventstore/sqlite
run python-driver 'eventstore/process=cmd:python3 examples/eventstore-driver/python/adapter.py'
labels="go-sqlite python-driver"
if [ "${JAVA:-0}" = 1 ]; then
	[ -n "${TCK_POSTGRES_URL:-}" ] || {
		echo "driver-bench: JAVA=1 needs TCK_POSTGRES_URL (eval \"\$(scripts/postgres-local.sh)\")" >&2
		exit 1
	}
	run java-driver eventstore/process-java
	labels="$labels java-driver"
fi

echo "driver-bench: $RUNS run(s) per target, $BURNERS CPU burner(s), $(nproc) cores"
python3 - "$tmp" "$RUNS" $labels <<'PY'
import json, sys, os
tmp, runs, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
fmt = "{:<14} {:>9} {:>9} {:>12} {:>10}  {}"
print(fmt.format("target", "rules/s", "ES-1 r/s", "ES-2 trials/s", "verdicts", "ES-2 power (contended trials of the target)"))
for label in labels:
    for n in range(1, runs + 1):
        res = json.load(open(os.path.join(tmp, f"{label}-{n}", "results.json")))["results"]
        total = sum(r["durationMs"] for r in res) / 1000
        es1 = [r for r in res if r["rule"].startswith("ES-1.")]
        es1_s = sum(r["durationMs"] for r in es1) / 1000
        contended, spent, power = 0, 0.0, []
        for r in res:
            if not r["rule"].startswith("ES-2."):
                continue
            fig = {f["name"]: f["value"] for f in r["evidence"].get("figures", [])}
            contended += fig.get("contended trials", 0)
            spent += fig.get("time spent", 0) / 1000
            power.append(f'{r["rule"]} {fig.get("contended trials", 0)}/{fig.get("contended trials needed", "?")} {r["verdict"]}')
        verdicts = {}
        for r in res:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        v = " ".join(f"{k}:{c}" for k, c in sorted(verdicts.items()))
        print(fmt.format(label, f"{len(res)/total:.1f}", f"{len(es1)/es1_s:.1f}", f"{contended/spent:.0f}", v, "; ".join(power)))
PY
