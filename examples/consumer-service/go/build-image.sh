#!/usr/bin/env sh
# build-image.sh [TAG]: builds the Go reference consumer service into a local
# image (default onceproof/consumer-service-go:dev) without pulling anything.
set -eu
tag=${1:-onceproof/consumer-service-go:dev}
here=$(cd "$(dirname "$0")" && pwd)
ctx=$(mktemp -d "${TMPDIR:-/tmp}/consumer-service-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
# Static (the image is empty), and built as the kit's own images are
# (scripts/build-images.sh): after make images only this package compiles.
(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/service" .)
cp "$here/Dockerfile" "$ctx/"
docker build -q -t "$tag" "$ctx"
