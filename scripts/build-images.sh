#!/usr/bin/env bash
# Builds the container images the kit's container targets use, on a Docker
# host with no registry: nothing is pulled, every image is FROM scratch.
#
#   nats:X.Y.Z    nats-server built from its Go module at the version go.mod
#                 requires, static (CGO_ENABLED=0)
#   postgres:15   PostgreSQL from this host's Debian packages, with the
#                 libraries its binaries link (ldd), and a static entrypoint
#   redis:7       redis-server from this host's Debian redis-server package,
#                 with the libraries it links (ldd)
#   rabbitmq:3.10-management
#                 RabbitMQ from this host's Debian rabbitmq-server package and
#                 the erlang-* packages it depends on, with the libraries their
#                 binaries link (ldd), the management plugin enabled
#   onceproof/tck:local
#                 the kit itself for a fleet (internal/images/tck, docs/fleet.md):
#                 tck, static, with its version stamped; a Sonobuoy plugin's image
#   onceproof/kfake-broker:local
#                 the kit's stand-in for a Kafka image (TCK_KAFKA_IMAGE):
#                 franz-go's kfake, an emulator, static (internal/images/kfakebroker)
#
# The images are tagged with the official names, so the kit's defaults resolve
# locally without a pull. Repeatable and cached: an image whose inputs did not
# change (its org.onceproof.tck.inputs label) is not rebuilt; the Go build
# cache keeps the compiles. Override names with TCK_NATS_IMAGE,
# TCK_POSTGRES_IMAGE, TCK_REDIS_IMAGE and TCK_RABBITMQ_IMAGE (the same
# variables the kit reads)
# and TCK_KFAKE_IMAGE,
# the versions with NATS_SERVER_VERSION; FORCE=1 rebuilds.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# The server version is the one go.mod requires: one source of truth.
NATS_SERVER_VERSION=${NATS_SERVER_VERSION:-$(cd "$root" && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)}
NATS_IMAGE=${TCK_NATS_IMAGE:-nats:${NATS_SERVER_VERSION#v}}
POSTGRES_IMAGE=${TCK_POSTGRES_IMAGE:-postgres:15}
REDIS_IMAGE=${TCK_REDIS_IMAGE:-redis:7}
RABBITMQ_IMAGE=${TCK_RABBITMQ_IMAGE:-rabbitmq:3.10-management}
KFAKE_IMAGE=${TCK_KFAKE_IMAGE:-onceproof/kfake-broker:local}
TCK_IMAGE=${TCK_IMAGE:-onceproof/tck:local}
PG_MAJOR=${PG_MAJOR:-15}
work=${TCK_IMAGE_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/onceproof/images}
# The legacy builder: it needs no buildx plugin and FROM scratch pulls nothing.
export DOCKER_BUILDKIT=0

log() { printf 'build-images: %s\n' "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
	log "Docker is not available (docker info failed); cannot build images"
	exit 4
fi

# current IMAGE: prints the inputs label of an existing image, or nothing.
current() { docker image inspect -f '{{index .Config.Labels "org.onceproof.tck.inputs"}}' "$1" 2>/dev/null || true; }

build_nats() {
	local ctx=$work/nats
	local inputs
	inputs=$( (echo "$NATS_SERVER_VERSION"; go version; cat "$root/internal/images/nats/Dockerfile" "$root/internal/images/nats/nats-server.conf") | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$(current "$NATS_IMAGE")" == "$inputs" ]]; then
		log "$NATS_IMAGE is up to date ($inputs)"
		return
	fi
	log "building nats-server $NATS_SERVER_VERSION"
	rm -rf "$ctx" && mkdir -p "$ctx"
	# go install outside any module builds exactly the released module.
	(cd "$ctx" && GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN="$ctx" \
		go install -trimpath -ldflags='-s -w' "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION")
	cp "$root/internal/images/nats/Dockerfile" "$root/internal/images/nats/nats-server.conf" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$NATS_IMAGE" "$ctx" >/dev/null
	prune
	log "built $NATS_IMAGE"
}

# copy_with_libs FILE...: copies each file into rootfs at its own path, with
# every shared library it links (and the dynamic loader), dereferenced.
copy_with_libs() {
	local f lib
	for f in "$@"; do
		mkdir -p "$rootfs$(dirname "$f")"
		cp -L "$f" "$rootfs$f"
		for lib in $(ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/[^ ]+ \(/{print $1}'); do
			if [[ ! -e "$rootfs$lib" ]]; then
				mkdir -p "$rootfs$(dirname "$lib")"
				cp -L "$lib" "$rootfs$lib"
			fi
		done
	done
}

build_postgres() {
	local pgbin=/usr/lib/postgresql/$PG_MAJOR/bin
	if [[ ! -x "$pgbin/postgres" ]]; then
		log "installing postgresql-$PG_MAJOR from Debian packages"
		apt-get install -y -qq "postgresql-$PG_MAJOR" >/dev/null || { apt-get update -qq && apt-get install -y -qq "postgresql-$PG_MAJOR" >/dev/null; }
	fi
	local pkgver
	pkgver=$(dpkg-query -W -f '${Version}' "postgresql-$PG_MAJOR" 2>/dev/null || "$pgbin/postgres" --version)
	local inputs
	inputs=$( (echo "$pkgver"; go version; cat "$root/internal/images/postgres/Dockerfile" "$root/internal/images/pgentrypoint/main.go") | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$(current "$POSTGRES_IMAGE")" == "$inputs" ]]; then
		log "$POSTGRES_IMAGE is up to date ($inputs)"
		return
	fi
	log "building $POSTGRES_IMAGE from postgresql-$PG_MAJOR $pkgver"
	local ctx=$work/postgres
	rm -rf "$ctx" && mkdir -p "$ctx/rootfs" "$ctx/owned/var/lib/postgresql/data" "$ctx/owned/tmp" "$ctx/owned/var/run/postgresql"
	rootfs=$ctx/rootfs
	# initdb runs `postgres -V` through popen, which needs /bin/sh. The JIT
	# provider (llvmjit.so, linking LLVM) is left out: PostgreSQL runs without
	# JIT when it is absent, and the image is 100+ MB smaller.
	local libs=()
	for f in /usr/lib/postgresql/"$PG_MAJOR"/lib/*.so; do
		[[ $(basename "$f") == llvmjit* ]] || libs+=("$f")
	done
	copy_with_libs "$pgbin"/* "${libs[@]}" /bin/dash
	ln -s dash "$rootfs/bin/sh"
	mkdir -p "$rootfs/usr/share/postgresql" "$rootfs/usr/share/zoneinfo" "$rootfs/etc"
	cp -a /usr/share/postgresql/"$PG_MAJOR" "$rootfs/usr/share/postgresql/"
	cp -a /usr/share/zoneinfo/. "$rootfs/usr/share/zoneinfo/"
	# initdb and postgres look their own user up; glibc reads these files.
	printf 'root:x:0:0:root:/root:/sbin/nologin\npostgres:x:999:999:PostgreSQL:/var/lib/postgresql:/sbin/nologin\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\npostgres:x:999:\n' >"$rootfs/etc/group"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$rootfs/docker-entrypoint" ./internal/images/pgentrypoint)
	chmod 1777 "$ctx/owned/tmp"
	chmod 0700 "$ctx/owned/var/lib/postgresql/data"
	cp "$root/internal/images/postgres/Dockerfile" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$POSTGRES_IMAGE" "$ctx" >/dev/null
	prune
	log "built $POSTGRES_IMAGE"
}

build_redis() {
	if ! command -v redis-server >/dev/null 2>&1; then
		log "installing redis-server from Debian packages"
		apt-get install -y -qq redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; }
	fi
	local pkgver
	pkgver=$(dpkg-query -W -f '${Version}' redis-server 2>/dev/null || redis-server --version)
	local inputs
	inputs=$( (echo "$pkgver"; cat "$root/internal/images/redis/Dockerfile") | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$(current "$REDIS_IMAGE")" == "$inputs" ]]; then
		log "$REDIS_IMAGE is up to date ($inputs)"
		return
	fi
	log "building $REDIS_IMAGE from redis-server $pkgver"
	local ctx=$work/redis
	rm -rf "$ctx" && mkdir -p "$ctx/rootfs"
	rootfs=$ctx/rootfs
	# /usr/bin/redis-server is a link to redis-check-rdb, which picks its
	# role from its name: copied dereferenced under the name redis-server.
	copy_with_libs /usr/bin/redis-server
	cp "$root/internal/images/redis/Dockerfile" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$REDIS_IMAGE" "$ctx" >/dev/null
	prune
	log "built $REDIS_IMAGE"
}

# erlang_closure PKG: prints PKG and, transitively, the installed erlang-*
# packages it depends on (an alternative that is not installed is skipped).
# One dpkg-query for the whole database: one per package costs seconds.
erlang_closure() {
	local -A deps=() seen=()
	local name status dep queue=("$1") p d
	# Depends reduced to its erlang-* names, space-separated, by one awk.
	while IFS=$'\t' read -r name status dep; do
		[[ $status == ii* ]] && deps[$name]=$dep
	done < <(dpkg-query -W -f '${Package}\t${db:Status-Abbrev}\t${Depends}\n' 'erlang-*' "$1" 2>/dev/null |
		awk -F'\t' '{ n = split($3, a, /[,|]/); d = ""
			for (i = 1; i <= n; i++) { sub(/\(.*/, "", a[i]); gsub(/[[:space:]]/, "", a[i]); sub(/:any$/, "", a[i])
				if (a[i] ~ /^erlang-/) d = d " " a[i] }
			print $1 "\t" $2 "\t" d }')
	while ((${#queue[@]})); do
		p=${queue[0]} queue=("${queue[@]:1}")
		[[ -n ${seen[$p]:-} || -z ${deps[$p]+set} ]] && continue
		seen[$p]=1
		echo "$p"
		for d in ${deps[$p]}; do queue+=("$d"); done
	done
}

build_rabbitmq() {
	if [[ $(dpkg-query -W -f '${db:Status-Abbrev}' rabbitmq-server 2>/dev/null) != ii* ]]; then
		log "installing rabbitmq-server from Debian packages"
		apt-get install -y -qq rabbitmq-server >/dev/null || { apt-get update -qq && apt-get install -y -qq rabbitmq-server >/dev/null; }
	fi
	local pkgs
	mapfile -t pkgs < <(erlang_closure rabbitmq-server)
	local inputs
	inputs=$( (dpkg-query -W -f '${Package} ${Version}\n' "${pkgs[@]}"; cat "$root/internal/images/rabbitmq/Dockerfile" "$root/internal/images/rabbitmq/10-defaults.conf" "$root/internal/images/rabbitmq/enabled_plugins"; declare -f erlang_closure build_rabbitmq) | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$(current "$RABBITMQ_IMAGE")" == "$inputs" ]]; then
		log "$RABBITMQ_IMAGE is up to date ($inputs)"
		return
	fi
	log "building $RABBITMQ_IMAGE from rabbitmq-server $(dpkg-query -W -f '${Version}' rabbitmq-server) and $((${#pkgs[@]} - 1)) erlang packages"
	local ctx=$work/rabbitmq
	rm -rf "$ctx" && mkdir -p "$ctx/rootfs/etc/rabbitmq/conf.d" "$ctx/owned/var/lib/rabbitmq" "$ctx/owned/var/log/rabbitmq" "$ctx/owned/tmp"
	rootfs=$ctx/rootfs
	# The packages' own files, symlinks kept, without what a server in a
	# container never reads: documentation, init and systemd units, the
	# Pacemaker agent, shell completion, Python's rabbitmqadmin, Erlang
	# headers and sources, and Debian's /usr/sbin wrappers (they switch to
	# the rabbitmq user through su; the image runs as that user already).
	dpkg -L "${pkgs[@]}" | sort -u |
		grep -Ev '^/usr/share/(doc|man|lintian|bug|rabbitmq)(/|$)|^/etc/(init\.d|default|logrotate\.d)(/|$)|^/lib/systemd(/|$)|^/usr/lib/ocf(/|$)|/autocomplete(/|$)|^/usr/bin/rabbitmqadmin$|^/usr/sbin/|\.hrl$|/src/[^/]*\.erl$' |
		while IFS= read -r f; do
			if [[ -L $f || -f $f ]]; then printf '%s\n' "${f#/}"; fi
		done >"$ctx/files"
	tar -C / --no-recursion -cf - -T "$ctx/files" | tar -C "$rootfs" -xf -
	# Every library the Erlang runtime's binaries and drivers link: the
	# executables and .so files among the packages' files that are ELF.
	local elf=() f
	while IFS= read -r f; do
		f=/$f
		if [[ ! -L $f && (-x $f || $f == *.so) && $(head -c4 "$f" | od -An -c | tr -d ' ') == 177ELF ]]; then elf+=("$f"); fi
	done <"$ctx/files"
	copy_with_libs "${elf[@]}"
	# The start scripts (rabbitmq-server, rabbitmq-env, erl) run in sh and
	# call dirname, basename, date and readlink; the disk monitor runs df,
	# the memory monitor getconf.
	copy_with_libs /bin/dash /usr/bin/dirname /usr/bin/basename /usr/bin/date /usr/bin/readlink /usr/bin/df /usr/bin/getconf /usr/bin/env
	ln -sf dash "$rootfs/bin/sh"
	cp "$root/internal/images/rabbitmq/10-defaults.conf" "$rootfs/etc/rabbitmq/conf.d/"
	cp "$root/internal/images/rabbitmq/enabled_plugins" "$rootfs/etc/rabbitmq/"
	# The node and epmd look their user and host up; glibc reads these.
	printf 'root:x:0:0:root:/root:/sbin/nologin\nrabbitmq:x:999:999:RabbitMQ:/var/lib/rabbitmq:/sbin/nologin\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nrabbitmq:x:999:\n' >"$rootfs/etc/group"
	printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
	chmod 1777 "$ctx/owned/tmp"
	chmod 0750 "$ctx/owned/var/lib/rabbitmq"
	cp "$root/internal/images/rabbitmq/Dockerfile" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$RABBITMQ_IMAGE" "$ctx" >/dev/null
	prune
	log "built $RABBITMQ_IMAGE"
}

build_kfake() {
	local inputs
	inputs=$( (cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go/pkg/kfake; go version; cat "$root/internal/images/kfake/Dockerfile" "$root/internal/images/kfakebroker/main.go") | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$(current "$KFAKE_IMAGE")" == "$inputs" ]]; then
		log "$KFAKE_IMAGE is up to date ($inputs)"
		return
	fi
	log "building $KFAKE_IMAGE (kfake, an emulator)"
	local ctx=$work/kfake
	rm -rf "$ctx" && mkdir -p "$ctx"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/kfakebroker" ./internal/images/kfakebroker)
	cp "$root/internal/images/kfake/Dockerfile" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$KFAKE_IMAGE" "$ctx" >/dev/null
	prune
	log "built $KFAKE_IMAGE"
}

build_tck() {
	local inputs version
	version=$(cd "$root" && git describe --always --dirty 2>/dev/null || echo devel)
	# The module's sources are the inputs: any change of the kit rebuilds it.
	inputs=$( (cd "$root" && go version && echo "$version" && cat go.sum "$root/internal/images/tck/Dockerfile" && git ls-files -s 2>/dev/null | sha256sum) | sha256sum | cut -c1-16)
	if [[ "${FORCE:-}" != 1 && "$version" != *-dirty && "$(current "$TCK_IMAGE")" == "$inputs" ]]; then
		log "$TCK_IMAGE is up to date ($inputs)"
		return
	fi
	log "building $TCK_IMAGE (tck $version)"
	local ctx=$work/tck
	rm -rf "$ctx" && mkdir -p "$ctx/tmp"
	chmod 1777 "$ctx/tmp"
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.Version=$version" -o "$ctx/tck" ./cmd/tck)
	cp "$root/internal/images/tck/Dockerfile" "$ctx/"
	docker build -q --label "org.onceproof.tck.image=1" --label "org.onceproof.tck.inputs=$inputs" \
		-t "$TCK_IMAGE" "$ctx" >/dev/null
	prune
	log "built $TCK_IMAGE"
}

# prune drops the kit's images a rebuild left untagged.
prune() { docker image prune -f --filter "label=org.onceproof.tck.image=1" >/dev/null; }

which=${1:-all}
start=$(date +%s)
case $which in
all) build_nats; build_postgres; build_redis; build_rabbitmq; build_kfake; build_tck ;;
nats) build_nats ;;
postgres) build_postgres ;;
redis) build_redis ;;
rabbitmq) build_rabbitmq ;;
kfake) build_kfake ;;
tck) build_tck ;;
*) log "usage: $0 [all|nats|postgres|redis|rabbitmq|kfake|tck]"; exit 3 ;;
esac
log "done in $(( $(date +%s) - start ))s"
