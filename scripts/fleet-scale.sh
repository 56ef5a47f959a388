#!/usr/bin/env bash
# fleet-scale.sh [N...]: wall time and peak RSS of `tck report merge` and
# `tck report gate` over N shard results (default 10 100 1000), twice:
#   synthetic  each shard one target and its 28 event-store results, with
#              their reasons, levels and figures but no histories or notes
#   full       each shard a whole real shard (a tck run of eventstore/memory,
#              every event-store rule, histories and all: about 0.7 MB)
# Each under a target name of its own, half in prod and half in staging,
# one in ten failed. Figures, not assertions.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10 100 1000)
work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/tck" ./cmd/tck)
"$work/tck" run --quiet --env prod --target eventstore/memory --suite eventstore --out "$work/seed" >/dev/null || true
echo "seed shard: $(du -k "$work/seed/results.json" | cut -f1) KB results.json, $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['results']))" "$work/seed/results.json") results"
printf '%-9s %6s  %8s %8s  %8s %8s\n' kind shards merge_s merge_MB gate_s gate_MB
for kind in synthetic full; do
for n in "${sizes[@]}"; do
	rm -rf "$work/shards" "$work/merged" && mkdir -p "$work/shards"
	python3 - "$work/seed/results.json" "$work/shards" "$n" "$kind" <<'PY'
import json, os, sys
seed, out, n, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = json.load(open(seed))
if kind == "synthetic":
    for res in base["results"]:
        ev = res.get("evidence") or {}
        res["evidence"] = {k: v for k, v in ev.items() if k in ("figures", "hazards", "setupHazards", "comparisons")}
name = base["targets"][0]["name"]
for i in range(n):
    env = "prod" if i % 2 == 0 else "staging"
    t = "%s-%04d" % (name, i)
    r = json.loads(json.dumps(base))
    r["run"]["environment"] = env
    r["targets"][0]["name"] = t
    for res in r["results"]:
        res["target"] = t
        if i % 10 == 9 and res["rule"] == "ES-1.1":
            res["verdict"] = "fail"
    d = os.path.join(out, "s%04d" % i)
    os.makedirs(d)
    json.dump(r, open(os.path.join(d, "results.json"), "w"))
PY
	/usr/bin/time -f '%e %M' -o "$work/m" "$work/tck" report merge --out "$work/merged" "$work"/shards/* >/dev/null 2>&1 || true
	/usr/bin/time -f '%e %M' -o "$work/g" "$work/tck" report gate --env prod "$work"/shards/* >/dev/null 2>&1 || true
	m=$(tail -1 "$work/m") g=$(tail -1 "$work/g")
	printf '%-9s %6d  %8s %8d  %8s %8d\n' "$kind" "$n" "${m% *}" $(( ${m#* } / 1024 )) "${g% *}" $(( ${g#* } / 1024 ))
done
done
