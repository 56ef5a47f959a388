#!/usr/bin/env bash
# postgres-local.sh: a throwaway PostgreSQL server on 127.0.0.1 for the
# eventstore/postgres tests and for `tck run --target eventstore/postgres=URL`.
#
#   eval "$(scripts/postgres-local.sh)"     # exports TCK_POSTGRES_URL
#   scripts/postgres-local.sh stop          # stops the server
#
# Installs the Debian packages if the server binaries are missing, creates a
# fresh data directory owned by the postgres user (initdb), starts it with
# pg_ctl (no systemd), creates a user and a database, waits until it accepts
# connections and prints the export line on stdout (progress goes to stderr).
# Idempotent: when the server is already up it only prints the URL.
#
# The data directory stays after `stop` (the next start reuses it); `tck clean`
# leaves it alone: it removes only folders carrying the kit's marker file
# (.onceproof-temp), never a folder by its tck- name. Remove it by hand.
#
# Settings (environment): PGPORT (5432), TCK_PG_DIR (/tmp/tck-postgres),
# TCK_PG_USER (tck), TCK_PG_PASSWORD (tck-local-only), TCK_PG_DB (tck).
set -euo pipefail

port=${PGPORT:-5432}
dir=${TCK_PG_DIR:-/tmp/tck-postgres}
user=${TCK_PG_USER:-tck}
password=${TCK_PG_PASSWORD:-tck-local-only}
db=${TCK_PG_DB:-tck}
data=$dir/data
url="postgres://$user:$password@127.0.0.1:$port/$db?sslmode=disable"

log() { echo "postgres-local: $*" >&2; }

# as_pg runs a command as the postgres user (the server refuses to run as root).
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

bindir() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
	done
	command -v pg_ctl >/dev/null 2>&1 && { dirname "$(command -v pg_ctl)"; return 0; }
	return 1
}

bin=$(bindir || true)

if [ "${1:-}" = stop ]; then
	if [ -n "$bin" ] && [ -f "$data/postmaster.pid" ]; then
		as_pg "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
	fi
	exit 0
fi

if [ -z "$bin" ]; then
	log "installing PostgreSQL from Debian packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
	bin=$(bindir)
fi

ready() { "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1; }

if ! ready; then
	if [ ! -f "$data/PG_VERSION" ]; then
		log "initdb in $data"
		mkdir -p "$dir"
		install -d -o postgres -g postgres -m 700 "$data"
		as_pg "$bin/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
	fi
	# A stale pid file from a killed server would stop pg_ctl from starting.
	if [ -f "$data/postmaster.pid" ] && ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
		rm -f "$data/postmaster.pid"
	fi
	log "starting on 127.0.0.1:$port"
	as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 30 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $data -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
		start >&2
	for _ in $(seq 1 60); do ready && break; sleep 0.25; done
	ready || { log "server did not become ready; see $data/server.log"; exit 1; }
fi

# The user and database (idempotent). The superuser connects over the socket
# in the data directory; when the server was started by someone else, over
# the default socket directory.
psql_admin() {
	local sock=$data
	[ -S "$sock/.s.PGSQL.$port" ] || sock=/var/run/postgresql
	as_pg "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$port" -U postgres -d postgres "$@"
}
if ! psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$user'" | grep -q 1; then
	psql_admin -c "CREATE ROLE \"$user\" LOGIN PASSWORD '$password'" >&2
fi
if ! psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
	psql_admin -c "CREATE DATABASE \"$db\" OWNER \"$user\"" >&2
fi

log "ready: ${url/:$password@/:xxxxx@}"
echo "export TCK_POSTGRES_URL='$url'"
