#!/usr/bin/env sh
# build-image.sh [TAG]: builds the Go reference consumer service into a local
# image (default onceproof/consumer-service-go:dev) without pulling anything.
set -eu
tag=${1:-onceproof/consumer-service-go:dev}
here=$(cd "$(dirname "$0")" && pwd)
ctx=$(mktemp -d "${TMPDIR:-/tmp}/consumer-service-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
(cd "$here" && CGO_ENABLED=0 go build -o "$ctx/service" .)
cp "$here/Dockerfile" "$ctx/"
docker build -q -t "$tag" "$ctx"
