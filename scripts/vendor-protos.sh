#!/usr/bin/env bash
# Refreshes the vendored schemas in third_party/ from the registries our machines reach
# (see third_party/README.md for why they are vendored).
set -euo pipefail
protovalidate_version="${PROTOVALIDATE_VERSION:-1.1.1}"
common_protos_version="${COMMON_PROTOS_VERSION:-1.76.0}"
grpc_health_version="${GRPC_HEALTH_VERSION:-2.1.0}"
grpc_reflection_version="${GRPC_REFLECTION_VERSION:-1.0.4}"
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
# gRPC's health and reflection schemas, as the grpc-node packages ship them (the PyPI wheels carry
# only generated code). LICENSE (Apache-2.0) stays as committed.
(cd "$tmp" && npm pack -q "grpc-health-check@${grpc_health_version}" "@grpc/reflection@${grpc_reflection_version}" >/dev/null)
tar xzf "$tmp/grpc-health-check-${grpc_health_version}.tgz" -C "$tmp" --transform 's,^package,health,'
tar xzf "$tmp/grpc-reflection-${grpc_reflection_version}.tgz" -C "$tmp" --transform 's,^package,reflection,'
mkdir -p "$root/third_party/grpc/grpc/health/v1" "$root/third_party/grpc/grpc/reflection/v1" "$root/third_party/grpc/grpc/reflection/v1alpha"
cp "$tmp/health/proto/health/v1/health.proto" "$root/third_party/grpc/grpc/health/v1/"
for version in v1 v1alpha; do cp "$tmp/reflection/build/proto/grpc/reflection/$version/reflection.proto" "$root/third_party/grpc/grpc/reflection/$version/"; done
echo "vendored validate.proto ${protovalidate_version}, error_details.proto and status.proto ${common_protos_version}, OTLP ${otlp_version}, gRPC health ${grpc_health_version} and reflection ${grpc_reflection_version}"
