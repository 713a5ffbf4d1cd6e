#!/usr/bin/env bash
# Python clients of calltrace (docs/codegen.md): messages (google.protobuf), grpcio stubs and
# connect-python stubs, from a calltrace checkout, with the Python that has grpcio-tools and
# protoc-gen-connectrpc installed (requirements.txt) first on PATH.
#   generate.sh CALLTRACE_CHECKOUT OUT_DIR
set -euo pipefail
calltrace="$1"
out="$2"
mkdir -p "$out"
# buf/validate is generated here: no PyPI package carries it for google.protobuf (the protovalidate
# wheel carries it for protobuf-py), so nothing else registers buf/validate/validate.proto.
# google/rpc is not generated: googleapis-common-protos provides google.rpc.error_details_pb2, and
# a second module of that name would shadow it or register the file twice.
python -m grpc_tools.protoc \
  -I "$calltrace/proto" -I "$calltrace/third_party/protovalidate" \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  --connectrpc_out="$out" --connectrpc_opt=protobuf=google \
  calltrace/v1/trace.proto calltrace/v1/trace_service.proto buf/validate/validate.proto
