#!/usr/bin/env bash
# Installs what the test suite runs for real and is missing on this machine, saying what it
# installs; what is already there is left alone (a second run only checks). `npm test` runs this
# first, so on a fresh Debian machine `npm install && npm test` is all it takes.
#   Debian packages (apt-get, as root): redis-server (Redis-backed limits), chromium (dashboard
#     browser tests), openssl (throwaway TLS certificates), wrk and nghttp2-client/h2load (the
#     benchmarks' load generators), curl (OTLP/HTTP interop), python3-venv (the venvs below).
#   Go tools (go install into $(go env GOPATH)/bin): grpcurl (reflection tests), protoc-gen-go,
#     protoc-gen-go-grpc, protoc-gen-connect-go (Go codegen consumer), mailpit (mail tests),
#     FerretDB 1.24 (the MongoDB-wire test server, scripts/install-ferretdb.sh), and the
#     OpenTelemetry Collector (scripts/build-otelcol.sh, into ~/.cache/calltrace).
#   Python venvs (pip, cached per machine, see below): .venv-otlp and .venv-otlp-official (OTLP interop apps),
#     .venv-codegen (Python codegen consumer),
#     .venv-hardening (schemathesis), .venv-prices (the price table's upstream, genai-prices),
#     each from its requirements file, redone when that changes.
# Versions here are the ones test/support/go-tools.ts and the requirements files name.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
say() { printf 'install-test-deps: %s\n' "$*"; }
fail() { printf 'install-test-deps: %s\n' "$*" >&2; exit 1; }

# command -> Debian package
declare -A apt_packages=(
  [redis-server]=redis-server [chromium]=chromium [openssl]=openssl [wrk]=wrk
  [h2load]=nghttp2-client [curl]=curl
)
missing=()
for tool in "${!apt_packages[@]}"; do command -v "$tool" >/dev/null || missing+=("${apt_packages[$tool]}"); done
"$python" -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then fail "missing Debian packages; as root run: apt-get install -y ${missing[*]}"; fi
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || fail "Go is missing (https://go.dev/dl/); it builds grpcurl, the protoc plugins, mailpit and FerretDB"
gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"
declare -A go_tools=(
  [grpcurl]=github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3
  [protoc-gen-go]=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
  [protoc-gen-go-grpc]=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
  [protoc-gen-connect-go]=connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
  [mailpit]=github.com/axllent/mailpit@v1.33.1
)
for tool in "${!go_tools[@]}"; do
  command -v "$tool" >/dev/null && continue
  say "go install ${go_tools[$tool]}"
  go install "${go_tools[$tool]}"
done
command -v ferretdb >/dev/null || { say "FerretDB v1.24.2 (scripts/install-ferretdb.sh)"; bash scripts/install-ferretdb.sh; }
# The OpenTelemetry Collector of test/otlp-interop/collector.test.ts: about 8 minutes, once (cached).
[ -x "$(bash scripts/build-otelcol.sh --where)" ] || { say "OpenTelemetry Collector (scripts/build-otelcol.sh, about 8 minutes)"; bash scripts/build-otelcol.sh >/dev/null; }

# Each venv is built once per machine and requirements file, in the cache beside the Collector's
# (~/.cache/calltrace, CALLTRACE_CACHE), and the project's .venv-* is a link to it: a clean clone,
# or a second checkout, reuses it instead of spending minutes in pip. Remade when its requirements
# change (a new one, named by their hash).
cache="${CALLTRACE_CACHE:-$HOME/.cache/calltrace}"
venv() {
  local link="$1" requirements="$2"
  local dir="$cache/venvs/${link#.}-$(sha256sum "$requirements" | cut -c1-16)"
  mkdir -p "$cache/venvs"
  (
    # Two checkouts' test runs may get here at once: one fills the venv, the other waits for it.
    flock 9
    if [ -x "$dir/bin/python" ] && cmp -s "$requirements" "$dir/installed-requirements.txt"; then exit 0; fi
    say "pip install -r $requirements into $dir"
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$dir/installed-requirements.txt"
  ) 9>"$dir.lock"
  if [ "$(readlink "$link" || true)" != "$dir" ]; then
    rm -rf "$link"
    ln -s "$dir" "$link"
  fi
}
venv .venv-otlp test/otlp-interop/requirements.txt
venv .venv-otlp-official test/otlp-interop/official-requirements.txt
venv .venv-codegen test/codegen/python/requirements.txt
venv .venv-hardening test/hardening/requirements.txt
venv .venv-prices scripts/prices/requirements.txt
say "all present"
