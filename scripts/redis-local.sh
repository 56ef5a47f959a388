#!/usr/bin/env bash
# redis-local.sh: a throwaway redis-server on 127.0.0.1 for the broker/redis
# tests and for `tck run --target broker/redis=URL`.
#
#   eval "$(scripts/redis-local.sh)"     # exports TCK_REDIS_URL
#   scripts/redis-local.sh stop          # stops the server
#
# Installs the Debian redis-server package if the binary is missing, starts
# a server of its own (daemonized, no systemd) on a loopback port with a
# data directory of its own, waits until it answers PING and prints the
# export line on stdout (progress goes to stderr). Idempotent: when the
# server is already up it only prints the URL.
#
# Settings (environment): REDIS_PORT (16379), TCK_REDIS_DIR
# (/tmp/tck-redis-$REDIS_PORT), TCK_REDIS_PASSWORD (tck-local-only; the
# default user's password, so ACL tests can add users of their own).
set -euo pipefail

port=${REDIS_PORT:-16379}
dir=${TCK_REDIS_DIR:-/tmp/tck-redis-$port}
password=${TCK_REDIS_PASSWORD:-tck-local-only}
url="redis://default:$password@127.0.0.1:$port/0"

log() { echo "redis-local: $*" >&2; }

cli() { REDISCLI_AUTH=$password redis-cli -h 127.0.0.1 -p "$port" "$@"; }

if [ "${1:-}" = stop ]; then
	pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		cli shutdown nosave >/dev/null 2>&1 || kill "$pid"
		for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
	fi
	exit 0
fi

if ! command -v redis-server >/dev/null 2>&1; then
	log "installing redis-server from Debian packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq redis-server >&2
fi

ready() { [ "$(cli ping 2>/dev/null)" = PONG ]; }

if ! ready; then
	mkdir -p "$dir"
	log "starting on 127.0.0.1:$port (data in $dir)"
	# appendonly yes, appendfsync always: the server the kit certifies
	# against is the durable one; the kit reads and reports the settings.
	redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
		--dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
		--daemonize yes --save '' --appendonly yes --appendfsync always \
		--requirepass "$password" >&2
	for _ in $(seq 1 60); do ready && break; sleep 0.25; done
	ready || { log "server did not become ready; see $dir/redis.log"; exit 1; }
fi

log "ready: ${url/:$password@/:xxxxx@}"
echo "export TCK_REDIS_URL='$url'"
