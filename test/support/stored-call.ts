import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

/** A call of project acc_a, key_a, openai gpt-4o, unless told otherwise. */
type Fields = Partial<Omit<StoredTrace, "receivedAt" | "$typeName">> & { at: number };
export function call({ at, ...rest }: Fields): StoredTrace {
  return create(StoredTraceSchema, {
    receivedAt: timestampFromMs(at),
    keyId: "key_a",
    accountId: "acc_a",
    country: "DE",
    provider: "openai",
    model: "gpt-4o",
    tokensIn: 100,
    tokensOut: 20,
    latencyMs: 250,
    costUsd: 0.001,
    status: "success",
    ...rest,
  });
}
