import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

/** RESOURCE_EXHAUSTED (HTTP 429) with the wait as a `retry-after` header and a google.rpc.RetryInfo detail. */
export function tooManyAttempts(what: string, waitSeconds: number): ConnectError {
  const retry = create(RetryInfoSchema, { retryDelay: { seconds: BigInt(waitSeconds) } });
  return new ConnectError(`${what}; try again in ${waitSeconds} s`, Code.ResourceExhausted, { "retry-after": String(waitSeconds) }, [
    { desc: RetryInfoSchema, value: retry },
  ]);
}
