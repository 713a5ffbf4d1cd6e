#!/usr/bin/env bash
# Builds FerretDB 1.24.2 (the MongoDB-compatible test server for the MongoDB store's tests and
# benchmark) into $(go env GOPATH)/bin/ferretdb. Needs Go and the Go module proxy.
#
# Why not `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`: that command also
# asks the proxy for the module's version list (to check for deprecation), which the proxy
# here refuses; and a binary built from the bare module panics at start-up because the
# module has no build/version/version.txt. So: download exactly that version, add the
# version file to a copy, and build the copy.
set -euo pipefail

version=v1.24.2
bin="$(go env GOPATH)/bin/ferretdb"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "version: $version"; then
  echo "ferretdb $version already at $bin"
  exit 0
fi

dir="$(go mod download -json "github.com/FerretDB/FerretDB@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "could not download github.com/FerretDB/FerretDB@$version" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$dir/." "$work"
chmod -R u+w "$work"
echo "$version" > "$work/build/version/version.txt"
mkdir -p "$(dirname "$bin")"
(cd "$work" && GOFLAGS=-mod=mod go build -o "$bin" ./cmd/ferretdb)
"$bin" --version | head -1
echo "installed $bin"
