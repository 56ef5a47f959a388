#!/usr/bin/env bash
# stress.sh [--burners N] [--pauses N] [RUNS] [-- tck run args...]
#
# Runs the default `tck run` RUNS times (default 10) beside N CPU-burning
# processes (default 2), as on a shared CI runner, and with --pauses P stops
# the kit (SIGSTOP of tck and every process it started) for 20 s at P random
# moments of each run, as a runner that parks a job does. Then it prints the
# false failures (a fail verdict: every default target is correct), the
# unknowns (with --pauses, each must name the kit's lateness or the pause),
# each run's wall time, exit code and pauses landed, and anything left
# behind: processes the kit started, its containers, its temporary folders.
#
# The burners are bounded (they end by themselves after the run's budget)
# and stopped on every exit path. Extra arguments (after RUNS, or after --)
# go to `tck run` (e.g. --suite broker).
#
# Exit 0 when there was no fail, nothing was left behind, and every unknown
# is explained: none at all without pauses, or each naming the kit's
# lateness or pause with them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
burn=2 pauses=0 n=10 pause_s=${STRESS_PAUSE_SECONDS:-20}
usage() { echo "usage: scripts/stress.sh [--burners N] [--pauses N] [RUNS] [-- tck run args...]" >&2; exit 2; }
num() { [[ $1 =~ ^[0-9]+$ ]] || { echo "stress.sh: $2 wants a whole number, got '$1'" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
	case $1 in
	--burners) [[ $# -ge 2 ]] || usage; num "$2" --burners; burn=$2; shift 2 ;;
	--pauses) [[ $# -ge 2 ]] || usage; num "$2" --pauses; pauses=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	[0-9]*) num "$1" RUNS; n=$1; shift ;;
	*) break ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/stress-tck.XXXXXX")
bin=$work/tck
(cd "$root" && go build -o "$bin" ./cmd/tck)

burners=()
kit=
stop_all() {
	# A kit left stopped would never end: continue it before anything else.
	if [[ -n $kit ]]; then
		for p in $(tree_of "$kit"); do kill -CONT "$p" 2>/dev/null || true; done
		kill "$kit" 2>/dev/null || true
	fi
	for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop_all EXIT
# tree_of PID: the pid and every descendant (the kit's per-target children,
# the servers it started), so a pause stops the kit as a whole.
tree_of() {
	local p=$1
	echo "$p"
	for c in $(pgrep -P "$p" 2>/dev/null || true); do tree_of "$c"; done
}
# summary FILE: "fails unknowns unexplained conclusion", then a line per
# fail or unknown (target, rule, verdict, reason).
summary() {
	python3 - "$1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
bad = [r for r in d.get("results", []) if r.get("verdict") in ("fail", "unknown")]
explained = re.compile(r"not scheduled|late|paus|interrupt")
unx = sum(1 for r in bad if r["verdict"] == "unknown" and not explained.search(r.get("reason", "")))
fails = sum(1 for r in bad if r["verdict"] == "fail")
print(fails, len(bad) - fails, unx, d.get("summary", {}).get("conclusion", "?"))
for r in bad:
    print(f'{r.get("target")} {r.get("rule")} {r["verdict"]}: {r.get("reason", "")[:300]}')
PY
}
budget=$((n * (150 + pauses * pause_s) + 60))
for _ in $(seq 1 "$burn"); do
	timeout "$budget" sh -c 'while :; do :; done' &
	burners+=($!)
done

tmp_before=$(ls -d /tmp/onceproof-* 2>/dev/null | sort || true)
fails=0 unknowns=0 unexplained=0 landed_all=0 codes=()
printf '%-4s %-5s %-8s %-6s %-8s %-7s %s\n' run exit wall_s fail unknown paused conclusion
for i in $(seq 1 "$n"); do
	out=$work/run-$i
	start=$(date +%s%N)
	"$bin" run --quiet --out "$out" "$@" >"$work/run-$i.log" 2>&1 &
	kit=$!
	# The pause moments: uniform over the first 15 s (a quiet default run
	# takes 8-25 s), sorted; one that comes after the run ended does not land.
	at=()
	for _ in $(seq 1 "$pauses"); do at+=($((RANDOM % 15000))); done
	mapfile -t at < <(printf '%s\n' "${at[@]}" | grep . | sort -n)
	landed=0
	for ms in "${at[@]}"; do
		now=$((($(date +%s%N) - start) / 1000000))
		[[ $ms -gt $now ]] && sleep "$(printf '%d.%03d' $(((ms - now) / 1000)) $(((ms - now) % 1000)))"
		kill -0 "$kit" 2>/dev/null || break
		procs=$(tree_of "$kit")
		for p in $procs; do kill -STOP "$p" 2>/dev/null || true; done
		sleep "$pause_s"
		for p in $procs; do kill -CONT "$p" 2>/dev/null || true; done
		landed=$((landed + 1))
	done
	code=0
	wait "$kit" || code=$?
	kit=
	landed_all=$((landed_all + landed))
	ms=$((($(date +%s%N) - start) / 1000000))
	wall=$((ms / 1000)).$(printf %03d $((ms % 1000)))
	f=0 u=0 x=0 concl="(no results.json)" lines=
	if [[ -f $out/results.json ]]; then
		# fails, unknowns, unknowns not naming the kit's lateness or a pause,
		# the conclusion; then one line per fail or unknown.
		sum=$(summary "$out/results.json")
		read -r f u x concl <<<"$(head -1 <<<"$sum")"
		lines=$(tail -n +2 <<<"$sum")
	fi
	fails=$((fails + f)) unknowns=$((unknowns + u))
	if [[ $pauses -eq 0 ]]; then unexplained=$((unexplained + u)); else unexplained=$((unexplained + x)); fi
	codes+=("$code")
	printf '%-4s %-5s %-8s %-6s %-8s %-7s %s\n' "$i" "$code" "$wall" "$f" "$u" "$landed" "$concl"
	[[ -n $lines ]] && echo "$lines" | sed 's/^/      /'
done
stop_all
trap - EXIT

procs=$(pgrep -af 'nats-server|onceproof' | grep -v "stress.sh\|pgrep" || true)
containers=$(docker ps -aq --filter label=org.onceproof.tck 2>/dev/null | wc -l || echo "?")
tmp_after=$(ls -d /tmp/onceproof-* 2>/dev/null | sort || true)
left_tmp=$(comm -13 <(echo "$tmp_before") <(echo "$tmp_after") | grep -v '^$' || true)
echo
echo "runs: $n beside $burn CPU burners, $pauses pauses of ${pause_s} s each asked ($landed_all landed); exit codes: ${codes[*]}"
echo "false failures (fail verdicts; every default target is correct): $fails"
echo "unknowns: $unknowns ($unexplained not naming the kit's lateness or a pause)"
echo "left behind: processes: $( [[ -z $procs ]] && echo 0 || echo "$procs" | wc -l ), containers: $containers, temp folders: $( [[ -z $left_tmp ]] && echo 0 || echo "$left_tmp" | wc -l )"
[[ -n $procs ]] && echo "$procs" | sed 's/^/  process: /'
[[ -n $left_tmp ]] && echo "$left_tmp" | sed 's/^/  temp: /'
echo "logs and reports: $work"
[[ $fails -eq 0 && $unexplained -eq 0 && -z $procs && -z $left_tmp && $containers == 0 ]]
