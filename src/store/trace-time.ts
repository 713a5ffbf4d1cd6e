import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

/**
 * Where a trace sits in time for every read, roll-up and retention sweep (D58): when the call was
 * made if the trace says so, else when it was received. The stores keep this in their time column
 * (`received_at`, `receivedAt`), so indexes, pages and roll-ups serve both kinds of trace alike.
 */
export function placedAtMs(trace: StoredTrace): number {
  return timestampMs(trace.calledAt ?? trace.receivedAt!);
}

/**
 * When the server received a trace that carries its call time, kept beside the placed time
 * (`arrived_at`, `arrivedAt`); undefined for a trace placed at its receipt. The monthly quota
 * counts a trace in the month it arrived.
 */
export function arrivedAtMs(trace: StoredTrace): number | undefined {
  return trace.calledAt === undefined ? undefined : timestampMs(trace.receivedAt!);
}
