#!/usr/bin/env bash
# stress.sh N: runs the default `tck run` N times with two CPU-burning
# processes alongside (as on a shared CI runner), then prints the false
# failures (a fail verdict on the reference targets), the unknowns, each
# run's wall time and exit code, and anything left behind: processes the kit
# started, its containers, and its temporary folders.
#
# The burners are bounded (they end by themselves after the run's budget)
# and stopped by this script on every exit path. Extra arguments after N go
# to `tck run` (e.g. --suite broker).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10}
shift || true
work=$(mktemp -d "${TMPDIR:-/tmp}/tck-stress.XXXXXX")
bin=$work/tck
(cd "$root" && go build -o "$bin" ./cmd/tck)

burners=()
stop_burners() {
	for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop_burners EXIT
budget=$((n * 120 + 60))
for _ in 1 2; do
	timeout "$budget" sh -c 'while :; do :; done' &
	burners+=($!)
done

tmp_before=$(ls -d /tmp/onceproof-* 2>/dev/null | sort || true)
fails=0 unknowns=0 codes=()
printf '%-4s %-5s %-8s %-6s %-8s %s\n' run exit wall_s fail unknown conclusion
for i in $(seq 1 "$n"); do
	out=$work/run-$i
	start=$(date +%s%N)
	code=0
	"$bin" run --quiet --out "$out" "$@" >"$work/run-$i.log" 2>&1 || code=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	wall=$((ms / 1000)).$(printf %03d $((ms % 1000)))
	f=0 u=0 concl="(no results.json)"
	if [[ -f $out/results.json ]]; then
		f=$(grep -c '"verdict": "fail"' "$out/results.json" || true)
		u=$(grep -c '"verdict": "unknown"' "$out/results.json" || true)
		concl=$(sed -n 's/.*"conclusion": "\(.*\)".*/\1/p' "$out/results.json" | head -1)
	fi
	fails=$((fails + f)) unknowns=$((unknowns + u))
	codes+=("$code")
	printf '%-4s %-5s %-8s %-6s %-8s %s\n' "$i" "$code" "$wall" "$f" "$u" "$concl"
	if [[ $f -gt 0 || $u -gt 0 ]]; then
		grep -h -B1 -A2 '"verdict": "\(fail\|unknown\)"' "$out/results.json" | grep '"rule"\|"reason"' | sed 's/^/      /' || true
	fi
done
stop_burners
trap - EXIT

procs=$(pgrep -af 'nats-server|onceproof' | grep -v "stress.sh\|pgrep" || true)
containers=$(docker ps -aq --filter label=org.onceproof.tck 2>/dev/null | wc -l || echo "?")
tmp_after=$(ls -d /tmp/onceproof-* 2>/dev/null | sort || true)
left_tmp=$(comm -13 <(echo "$tmp_before") <(echo "$tmp_after") | grep -v '^$' || true)
echo
echo "runs: $n; exit codes: ${codes[*]}"
echo "false failures (fail verdicts on the reference targets): $fails"
echo "unknowns: $unknowns"
echo "left behind: processes: $( [[ -z $procs ]] && echo 0 || echo "$procs" | wc -l ), containers: $containers, temp folders: $( [[ -z $left_tmp ]] && echo 0 || echo "$left_tmp" | wc -l )"
[[ -n $procs ]] && echo "$procs" | sed 's/^/  process: /'
[[ -n $left_tmp ]] && echo "$left_tmp" | sed 's/^/  temp: /'
echo "logs and reports: $work"
[[ $fails -eq 0 && $unknowns -eq 0 && -z $procs && -z $left_tmp && $containers == 0 ]]
