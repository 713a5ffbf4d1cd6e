#!/usr/bin/env bash
# Refreshes the vendored schemas in third_party/ from the registries our machines reach
# (see third_party/README.md for why they are vendored).
set -euo pipefail
protovalidate_version="${PROTOVALIDATE_VERSION:-1.1.1}"
common_protos_version="${COMMON_PROTOS_VERSION:-1.76.0}"
otlp_version="${OTLP_VERSION:-1.11.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

mvn -q dependency:get -Dartifact="build.buf:protovalidate:${protovalidate_version}" -Dtransitive=false
jar="${HOME}/.m2/repository/build/buf/protovalidate/${protovalidate_version}/protovalidate-${protovalidate_version}.jar"
(cd "$root/third_party/protovalidate" && unzip -o -q "$jar" buf/validate/validate.proto)

pip download -q --no-deps -d "$tmp" "googleapis-common-protos==${common_protos_version}"
(cd "$root/third_party/googleapis" && unzip -o -q "$tmp"/googleapis_common_protos-*.whl google/rpc/error_details.proto google/rpc/status.proto)

# The OTLP schemas as published with the Java bindings (the jar carries the .proto files of the
# release tag); only the trace export service and what it imports. LICENSE (Apache-2.0) stays as committed.
mvn -q dependency:get -Dartifact="io.opentelemetry.proto:opentelemetry-proto:${otlp_version}-alpha" -Dtransitive=false
otlp_jar="${HOME}/.m2/repository/io/opentelemetry/proto/opentelemetry-proto/${otlp_version}-alpha/opentelemetry-proto-${otlp_version}-alpha.jar"
(cd "$root/third_party/opentelemetry-proto" && unzip -o -q "$otlp_jar" \
  opentelemetry/proto/collector/trace/v1/trace_service.proto opentelemetry/proto/trace/v1/trace.proto \
  opentelemetry/proto/common/v1/common.proto opentelemetry/proto/resource/v1/resource.proto)
echo "vendored validate.proto ${protovalidate_version}, error_details.proto and status.proto ${common_protos_version}, OTLP ${otlp_version}"
