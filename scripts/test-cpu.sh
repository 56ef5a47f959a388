#!/usr/bin/env bash
# test-cpu.sh [COMMAND...]: where the processor time of a command goes.
#
# Runs COMMAND (default: make test) and, every half second while it runs,
# reads every process's CPU time from /proc (Linux); at the end it prints
# the command's wall time and exit code, then the processor seconds by
# kind: the kit's test binaries, the build (compile, link, vet), RabbitMQ
# nodes, Docker, PostgreSQL, Python, Chromium, the tck CLI, ... with the
# largest processes of each. `make test` is bound by the two cores of CI,
# so its wall time moves only when this total does.
#
# A process that lives less than half a second may be missed: the figures
# are a lower bound (compile and link most of all). Other work on the host
# (a browser, a second build) is counted too: run it on a quiet machine.
set -euo pipefail
[ "$#" -gt 0 ] || set -- make test
[ -r /proc/self/stat ] || { echo "test-cpu.sh: needs Linux /proc" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out" "$out.stop"' EXIT

python3 - "$out" "${TOP:-4}" <<'EOF' &
import os, sys, time
hz = os.sysconf("SC_CLK_TCK")
stopfile = sys.argv[1] + ".stop"  # the command has ended: one last pass, then the table
seen, base, first = {}, {}, True
while True:
    last = os.path.exists(stopfile)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            s = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        r = s.rfind(")")
        f = s[r + 2:].split()
        key = (pid, f[19])  # pid and start time: a reused pid is another process
        ticks = int(f[11]) + int(f[12])
        if first:
            base[key] = ticks  # what ran before the command is not its time
        seen[key] = (s[s.find("(") + 1:r], ticks - base.get(key, 0))
    first = False
    if last:
        break
    time.sleep(0.5)
kinds = [
    ("the kit's test binaries", lambda c: ".test" in c or c.endswith(".tes") or c.endswith(".te")),
    ("build (compile, link, vet, go)", lambda c: c in ("compile", "link", "vet", "go", "asm", "cgo")),
    ("RabbitMQ nodes", lambda c: c in ("beam.smp", "epmd", "erl_child_setup", "inet_gethost")),
    ("Docker", lambda c: c.startswith(("dockerd", "containerd", "docker", "fuse-overlayfs", "runc"))),
    ("PostgreSQL", lambda c: c.startswith(("postgres", "initdb", "pg_ctl"))),
    ("Python", lambda c: c.startswith("python")),
    ("Java", lambda c: c in ("java", "javac")),
    ("Chromium", lambda c: c.startswith("chrom")),
    ("the tck CLI", lambda c: c == "tck"),
    ("redis-server", lambda c: c.startswith("redis")),
    ("nats-server", lambda c: c.startswith("nats")),
    ("kernel threads", lambda c: c.startswith(("kworker", "kdamond", "ksoftirqd", "rcu_", "jbd2"))),
]
by = {}
for comm, ticks in seen.values():
    kind = next((k for k, match in kinds if match(comm)), "other")
    by.setdefault(kind, {}).setdefault(comm, 0)
    by[kind][comm] += ticks / hz
total = sum(sum(c.values()) for c in by.values())
with open(sys.argv[1], "w") as o:
    o.write("processor seconds: %.0f\n" % total)
    for kind, comms in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(comms.values())
        if n < 0.5:
            continue
        top = ", ".join("%s %.0f" % (c, v) for c, v in sorted(comms.items(), key=lambda kv: -kv[1])[:int(sys.argv[2])])
        o.write("%7.0f  %4.1f%%  %-32s %s\n" % (n, 100 * n / max(total, 1), kind, top))
EOF
sampler=$!

start=$SECONDS
rc=0
"$@" || rc=$?
wall=$((SECONDS - start))
touch "$out.stop"
wait "$sampler" || true
echo "== test-cpu.sh: $* took ${wall} s, exit ${rc}"
cat "$out"
exit "$rc"
