#!/usr/bin/env bash
# Refreshes third_party/protovalidate/buf/validate/validate.proto from the protovalidate jar on
# Maven Central (the only registry our machines reach that ships the .proto source).
set -euo pipefail
version="${1:?usage: $0 <protovalidate-java version>}"
mvn -q dependency:get -Dartifact="build.buf:protovalidate:${version}" -Dtransitive=false
jar="${HOME}/.m2/repository/build/buf/protovalidate/${version}/protovalidate-${version}.jar"
cd "$(dirname "$0")/../third_party/protovalidate"
unzip -o -q "$jar" buf/validate/validate.proto
echo "vendored buf/validate/validate.proto from protovalidate ${version}"
