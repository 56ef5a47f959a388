#!/bin/sh
# bench.sh: wall time, the longest single rule, their ratio and the peak
# RSS of the built tck, for the default run, `tck run --suite consumer` and
# (BENCH_SELFTEST=1, several minutes) `tck selftest`. A run bounded by its
# longest wait has a ratio near 1; one whose rules run one after another
# has a ratio near the number of its rules' waits.
#
#   scripts/bench.sh            # each run 3 times, the median printed
#   BENCH_RUNS=1 scripts/bench.sh
#
# Figures, not assertions: `make test` never times anything.
set -eu
cd "$(dirname "$0")/.."
runs=${BENCH_RUNS:-3}
make -s build
bin=./bin/tck
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timer=
if [ -x /usr/bin/time ]; then
	timer="/usr/bin/time -f %M -o $tmp/rss"
fi

# longest DIR: the longest rule of a report, in seconds, and its id.
longest() {
	python3 - "$1/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d.get("results") or []
r = max(rs, key=lambda r: r.get("durationMs", 0))
print("%.2f %s/%s" % (r.get("durationMs", 0) / 1000, r["target"], r["rule"]))
PY
}

bench() {
	name=$1
	shift
	: >"$tmp/lines"
	i=0
	while [ "$i" -lt "$runs" ]; do
		i=$((i + 1))
		out="$tmp/out-$i"
		start=$(date +%s.%N)
		set +e
		$timer "$bin" "$@" --quiet --out "$out" >/dev/null 2>"$tmp/err"
		code=$?
		set -e
		end=$(date +%s.%N)
		wall=$(echo "$end - $start" | bc)
		rss=$(if [ -s "$tmp/rss" ]; then tail -1 "$tmp/rss"; else echo 0; fi)
		if [ -f "$out/results.json" ]; then
			l=$(longest "$out")
		else
			l="0 -"
		fi
		echo "$wall $code $rss $l" >>"$tmp/lines"
		if [ "$code" -ne 0 ] && [ -f "$out/results.json" ]; then
			# A run that did not pass: its report kept, to see which rule.
			kept=$(mktemp -d "${TMPDIR:-/tmp}/tck-bench-exit$code.XXXXXX")
			cp -r "$out/." "$kept/"
			echo "$name: exit $code, report kept in $kept" >&2
		fi
		rm -rf "$out"
	done
	# The median run by wall time.
	sort -n "$tmp/lines" | sed -n "$(((runs + 1) / 2))p" | {
		read -r wall code rss lsec lrule
		ratio=$(echo "scale=2; $wall / $lsec" | bc 2>/dev/null || echo "-")
		printf '%-26s wall %6.1f s  exit %s  longest rule %5.1f s (%s)  ratio %s  peak RSS %s MiB  (median of %d)\n' \
			"$name" "$wall" "$code" "$lsec" "$lrule" "$ratio" "$((rss / 1024))" "$runs"
	}
}

bench "tck run" run
bench "tck run --suite consumer" run --suite consumer
if [ "${BENCH_SELFTEST:-0}" = 1 ]; then
	start=$(date +%s.%N)
	set +e
	$timer "$bin" selftest >/dev/null 2>&1
	code=$?
	set -e
	end=$(date +%s.%N)
	rss=$(if [ -s "$tmp/rss" ]; then tail -1 "$tmp/rss"; else echo 0; fi)
	printf '%-26s wall %6.1f s  exit %s  peak RSS %s MiB\n' "tck selftest" "$(echo "$end - $start" | bc)" "$code" "$((rss / 1024))"
fi
