#!/usr/bin/env bash
# verdict-diff.sh OLD NEW
#
# Compares two sets of `tck run` / `tck selftest` results per (target,
# rule): OLD and NEW are each a results.json or selftest.json, or a folder
# searched for both (the --out folders of several runs and of
# `tck selftest --out`, whose rows are the mutants and references). Prints every
# (target, rule) whose verdict differs, and those found on one side only,
# then a one-line summary.
#
# A refactor that must keep every verdict (the same code's rules on another
# skeleton) is checked with it: run the same commands on the old and the new
# commit into two folders, then compare them.
#
# Exit 0: the same verdicts; 1: a difference; 3: bad input (one line).
set -euo pipefail
if [[ $# -ne 2 ]]; then
	echo "usage: scripts/verdict-diff.sh OLD NEW (each a results.json or a folder of them)" >&2
	exit 3
fi
for p in "$1" "$2"; do
	if [[ ! -e $p ]]; then
		echo "verdict-diff: $p does not exist" >&2
		exit 3
	fi
done
exec python3 - "$1" "$2" <<'PY'
import json, os, sys

def files(p):
    if os.path.isfile(p):
        return [p]
    out = []
    for d, _, fs in os.walk(p):
        out += [os.path.join(d, f) for f in fs if f in ("results.json", "selftest.json")]
    return sorted(out)

def load(p):
    fs = files(p)
    if not fs:
        print(f"verdict-diff: no results.json or selftest.json in {p}", file=sys.stderr)
        sys.exit(3)
    got = {}
    for f in fs:
        try:
            with open(f, "rb") as fh:
                d = json.loads(fh.read(64 << 20))
        except (OSError, ValueError) as e:
            print(f"verdict-diff: {f}: not JSON ({type(e).__name__})", file=sys.stderr)
            sys.exit(3)
        if isinstance(d, list):  # selftest.json: one matrix per suite
            for m in d:
                for row in (m.get("rows") or []) if isinstance(m, dict) else []:
                    for rule, v in (row.get("verdicts") or {}).items():
                        got.setdefault(("selftest:" + str(row.get("target", "")), str(rule)), set()).add(str(v))
            continue
        for r in d.get("results", []) if isinstance(d, dict) else []:
            key = (str(r.get("target", "")), str(r.get("rule", "")))
            v = str(r.get("verdict", ""))
            # The same rule in several runs: every verdict seen, kept as a set.
            got.setdefault(key, set()).add(v)
    return got

old, new = load(sys.argv[1]), load(sys.argv[2])
changed = only_old = only_new = 0
for key in sorted(old.keys() | new.keys()):
    a, b = old.get(key), new.get(key)
    t, rule = key
    if a is None:
        only_new += 1
        print(f"{t} {rule}: only in NEW ({'/'.join(sorted(b))})")
    elif b is None:
        only_old += 1
        print(f"{t} {rule}: only in OLD ({'/'.join(sorted(a))})")
    elif a != b:
        changed += 1
        print(f"{t} {rule}: {'/'.join(sorted(a))} -> {'/'.join(sorted(b))}")
same = len(old.keys() & new.keys()) - changed
print(f"{same} (target, rule) pairs with the same verdicts, {changed} changed, {only_old} only in OLD, {only_new} only in NEW")
sys.exit(1 if changed or only_old or only_new else 0)
PY
