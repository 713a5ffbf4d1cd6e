#!/usr/bin/env bash
# Builds the OpenTelemetry Collector that test/otlp-collector/ puts in front of calltrace: the core
# OTLP receiver, the batch processor and the otlp_grpc and otlp_http exporters, made by the
# Collector's own builder (ocb, go.opentelemetry.io/collector/cmd/builder) from the Go module
# proxy. It takes about 8 minutes on 2 cores, so it is built once into a cache directory
# (OTELCOL_CACHE, default ~/.cache/calltrace) and reused. Prints the binary's path; with --where,
# prints it without building.
set -euo pipefail
version=v0.165.0
cache="${OTELCOL_CACHE:-$HOME/.cache/calltrace}/otelcol-$version"
binary="$cache/otelcol-calltrace"
if [ "${1:-}" = "--where" ] || [ -x "$binary" ]; then echo "$binary"; exit 0; fi
export PATH="$(go env GOPATH)/bin:$PATH"
mkdir -p "$cache"
# One build at a time (CI starts one in the background while `npm test` may ask for it too).
exec 9>"$cache/.lock"
flock 9
if [ -x "$binary" ]; then echo "$binary"; exit 0; fi
GOBIN="$cache/bin" go install "go.opentelemetry.io/collector/cmd/builder@$version" >&2
cat > "$cache/builder.yaml" <<YAML
dist:
  name: otelcol-calltrace
  description: OpenTelemetry Collector for calltrace's interop tests
  output_path: $cache/build
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver $version
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor $version
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter $version
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter $version
YAML
"$cache/bin/builder" --config "$cache/builder.yaml" >&2
mv "$cache/build/otelcol-calltrace" "$binary"
rm -rf "$cache/build"
echo "$binary"
