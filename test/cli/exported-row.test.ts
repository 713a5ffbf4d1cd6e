import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { PriceCheck, StoredTraceSchema, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { traceJson } from "../../src/download/trace-lines.js";
import { exportedRowWrite } from "../../src/import/exported-row.js";
import { fastExportedRow } from "../../src/import/exported-row-fast.js";
import type { ImportContext } from "../../src/import/import-item.js";
import { PriceBook } from "../../src/pricing/price-match.js";

/** The fast path for exported rows (IMPORT_FAST_PATH) against the generic reader: the same write, or the same refusal, for every row. */
const day = 86_400_000;
const now = Date.now();
const context = (fastExportedRows: boolean): ImportContext => ({
  projectId: "prj_target",
  keepDays: 90,
  nowMs: now,
  book: new PriceBook([]),
  metadataAttributes: [],
  fastExportedRows,
});

/** A row as `traces export` writes it (every field, snake_case names), with an id. */
function exportedRow(i: number, extra: MessageInitShape<typeof StoredTraceSchema> = {}): JsonObject {
  const trace = create(StoredTraceSchema, {
    id: `0123456789abcde${i % 10}`,
    receivedAt: timestampFromMs(now - (i % 30) * day - 1234),
    keyId: "key_1",
    accountId: "prj_source",
    country: "DE",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    tokensIn: 1000 + i,
    tokensOut: 200,
    latencyMs: 900,
    costUsd: 0.0123,
    status: "success",
    priceCheck: PriceCheck.MATCH,
    serverCostUsd: 0.0123,
    source: TraceSource.API,
    userId: `user-${i}`,
    sessionId: "s-1",
    tags: ["a", "b"],
    metadata: { feature: "search", "team.name": "+growth" },
    environment: "production",
    ...extra,
  });
  return traceJson(trace) as JsonObject;
}

const rows: [string, JsonObject][] = [
  ["a plain row", exportedRow(1)],
  ["a row with a call time to the nanosecond", { ...exportedRow(2), called_at: "2026-11-20T10:00:00.123456789Z" }],
  ["a failed call", exportedRow(3, { status: "error", error: '=upstream 502, "quoted"', tokensCachedIn: 10, tokensCacheWrite: 5, ttftMs: 300 })],
  ["an OTLP call", exportedRow(4, { source: TraceSource.OTLP, otlpTraceId: "a".repeat(32), otlpSpanId: "b".repeat(16), serviceName: "agent" })],
  ["a row without attribution", exportedRow(5, { userId: undefined, sessionId: undefined, tags: [], metadata: {}, environment: undefined })],
  ["nulls for unset fields", { ...exportedRow(6), user_id: null, error: null, tags: null, metadata: null }],
  ["unknown fields", { ...exportedRow(7), extra: [1, 2], api_key: "ct_live_whatever" }],
  ["a call time with an offset", { ...exportedRow(8), called_at: new Date(now - day).toISOString().replace("Z", "+00:00") }],
  ["an enum by number", { ...exportedRow(9), price_check: 1 }],
  ["an unknown enum name", { ...exportedRow(10), source: "TRACE_SOURCE_CARRIER_PIGEON" }],
  ["a field by its JSON name", { ...exportedRow(11), tokensIn: 5 }],
  ["a number as a string", { ...exportedRow(12), tokens_in: "1200" }],
  ["a fraction for an integer", { ...exportedRow(13), latency_ms: 1.5 }],
  ["negative tokens and an unknown provider", { ...exportedRow(14), tokens_in: -1, provider: "cohere" }],
  ["an error on a success", { ...exportedRow(15), error: "boom" }],
  ["a tag that is not a string", { ...exportedRow(16), tags: ["a", 1] }],
  ["a metadata value that is not a string", { ...exportedRow(17), metadata: { a: 1 } }],
  ["a lone surrogate", { ...exportedRow(18), user_id: "\ud800" }],
  ["a call time in the future", { ...exportedRow(19), called_at: new Date(now + 3_600_000).toISOString() }],
  ["a receipt older than the project keeps", { ...exportedRow(20), received_at: new Date(now - 200 * day).toISOString() }],
  ["no receipt", (({ received_at: _, ...row }) => row)(exportedRow(21))],
  ["a receipt that is not a date", { ...exportedRow(22), received_at: "2026-13-45T99:00:00Z" }],
  ["no id", { ...exportedRow(23), id: "" }],
  ["a model past its longest", { ...exportedRow(24), model: "m".repeat(300) }],
];

describe("exported rows on the fast path", () => {
  it.each(rows)("%s: the same write or refusal as the generic reader", (_name, row) => {
    expect(exportedRowWrite(structuredClone(row), context(true))).toEqual(exportedRowWrite(structuredClone(row), context(false)));
  });

  it("reads the rows an export writes itself, and leaves the unusual ones to the generic reader", () => {
    for (const i of [1, 2, 3, 4, 5, 6, 7]) expect(fastExportedRow(rows[i - 1]![1])).toBeDefined();
    for (const i of [8, 9, 10, 11, 12, 13, 16, 17, 22]) expect(fastExportedRow(rows[i - 1]![1]), rows[i - 1]![0]).toBeUndefined();
    const write = exportedRowWrite(rows[1]![1], context(true));
    expect(write).toMatchObject({ importKey: "id:0123456789abcde2", trace: { accountId: "prj_target", id: "", calledAt: { nanos: 123456789 } } });
  });
});
