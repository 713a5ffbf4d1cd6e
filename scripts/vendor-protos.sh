#!/usr/bin/env bash
# Refreshes the vendored schemas in third_party/ from the registries our machines reach
# (see third_party/README.md for why they are vendored).
set -euo pipefail
protovalidate_version="${PROTOVALIDATE_VERSION:-1.1.1}"
common_protos_version="${COMMON_PROTOS_VERSION:-1.76.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

mvn -q dependency:get -Dartifact="build.buf:protovalidate:${protovalidate_version}" -Dtransitive=false
jar="${HOME}/.m2/repository/build/buf/protovalidate/${protovalidate_version}/protovalidate-${protovalidate_version}.jar"
(cd "$root/third_party/protovalidate" && unzip -o -q "$jar" buf/validate/validate.proto)

pip download -q --no-deps -d "$tmp" "googleapis-common-protos==${common_protos_version}"
(cd "$root/third_party/googleapis" && unzip -o -q "$tmp"/googleapis_common_protos-*.whl google/rpc/error_details.proto)
echo "vendored validate.proto ${protovalidate_version} and error_details.proto ${common_protos_version}"
