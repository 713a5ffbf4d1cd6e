import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { exportOf, genAiSpan, postExport } from "../otlp/otlp-support.js";
import { refusal } from "../support/rpc-refusal.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

/** D58: a trace's optional call time, its bounds on every way in, and where it places the trace. */
let service: TestService;
const day = 86_400_000;

beforeAll(async () => {
  service = await startTestService({
    retentionDays: 30,
    plans: { pro: { per_minute: 10_000, per_month: 500_000 } },
  });
});

async function storedOf(accountId: string): Promise<StoredTrace[]> {
  const traces: StoredTrace[] = [];
  for await (const t of service.store.exportTraces({ accountId })) traces.push(t);
  return traces;
}

async function details(response: Response): Promise<string> {
  expect(response.status).toBe(400);
  return ((await response.json()) as { details: string }).details;
}

describe("called_at on POST /v1/traces", () => {
  it("stores a trace with its call time, placed there, and keeps when it was received", async () => {
    const { key, accountId } = await service.createKey("pro");
    const called = Date.now() - 3 * day;
    const sentAt = Date.now();
    const response = await postTrace(service.url, traceBody(key, { called_at: new Date(called).toISOString() }), { key });
    expect(response.status).toBe(202);
    const [stored] = await storedOf(accountId);
    expect(timestampMs(stored!.calledAt!)).toBe(called);
    expect(timestampMs(stored!.receivedAt!)).toBeGreaterThanOrEqual(sentAt);
    // A trace without one (an older client) is placed at its receipt, as before.
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    const traces = await storedOf(accountId);
    expect(traces).toHaveLength(2);
    expect(traces.filter((t) => t.calledAt === undefined)).toHaveLength(1);
  });

  it("reads RFC 3339 with offsets and fractions, and refuses other text naming the field", async () => {
    const { key, accountId } = await service.createKey("pro");
    const at = new Date(Date.now() - day);
    at.setUTCMilliseconds(250);
    const withOffset = at.toISOString().replace("Z", "+00:00");
    expect((await postTrace(service.url, traceBody(key, { called_at: withOffset }), { key })).status).toBe(202);
    expect(timestampMs((await storedOf(accountId))[0]!.calledAt!)).toBe(at.getTime());
    const rfc = "called_at: must be an RFC 3339 timestamp such as 2026-11-26T19:00:00Z (UTC, Z or an offset)";
    for (const bad of ["yesterday", 1732646400, "2026-11-26", "2026-13-01T00:00:00Z", { seconds: 1 }]) {
      expect(await details(await postTrace(service.url, traceBody(key, { called_at: bad }), { key }))).toBe(rfc);
    }
  });

  it("refuses a call time more than 5 minutes ahead, or before the retention period, with a 400 naming called_at", async () => {
    const { key, accountId } = await service.createKey("pro");
    const ahead = new Date(Date.now() + 6 * 60_000).toISOString();
    expect(await details(await postTrace(service.url, traceBody(key, { called_at: ahead }), { key }))).toMatch(
      /^called_at: must not be more than 5 minutes ahead of the server's clock \(\d{4}-/,
    );
    // Within the drift allowed.
    const slightlyAhead = new Date(Date.now() + 2 * 60_000).toISOString();
    expect((await postTrace(service.url, traceBody(key, { called_at: slightlyAhead }), { key })).status).toBe(202);
    const old = new Date(Date.now() - 31 * day).toISOString();
    expect(await details(await postTrace(service.url, traceBody(key, { called_at: old }), { key }))).toMatch(
      /^called_at: must not be before \S+ \(the project keeps traces for 30 days\)$/,
    );
    // Several problems are reported together, in the contract's order.
    expect(await details(await postTrace(service.url, traceBody(key, { tokens_in: -1, called_at: old }), { key }))).toMatch(
      /^tokens_in: must be greater than or equal to 0; called_at: must not be before/,
    );
    expect(await storedOf(accountId)).toHaveLength(1);
  });

  it("bounds a call time by the project's own retention when it keeps traces for less than RETENTION_DAYS", async () => {
    const { key, accountId } = await service.createKey("pro");
    await service.store.teams.updateProject(accountId, { retentionDays: 7 });
    // The key (and its project's retention with it) is first read by the request below.
    const eightDaysAgo = new Date(Date.now() - 8 * day).toISOString();
    expect(await details(await postTrace(service.url, traceBody(key, { called_at: eightDaysAgo }), { key }))).toMatch(
      /the project keeps traces for 7 days\)$/,
    );
    const sixDaysAgo = new Date(Date.now() - 6 * day).toISOString();
    expect((await postTrace(service.url, traceBody(key, { called_at: sixDaysAgo }), { key })).status).toBe(202);
  });

  it("counts a backdated trace against this month's quota: X-Quota-Remaining goes down as for any other", async () => {
    const { key } = await service.createKey("pro");
    const first = await postTrace(service.url, traceBody(key), { key });
    const backdated = await postTrace(service.url, traceBody(key, { called_at: new Date(Date.now() - 20 * day).toISOString() }), { key });
    expect(backdated.status).toBe(202);
    expect(Number(backdated.headers.get("x-quota-remaining"))).toBe(Number(first.headers.get("x-quota-remaining")) - 1);
  });
});

describe("called_at over gRPC", () => {
  it("is a Timestamp; out of bounds it is INVALID_ARGUMENT naming called_at", async () => {
    const { key, accountId } = await service.createKey("pro");
    const client = createClient(TraceService, createGrpcTransport({ baseUrl: service.url }));
    const trace = (calledAt: number) => ({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      tokensIn: 900,
      tokensOut: 120,
      latencyMs: 1500,
      costUsd: 0.0045,
      apiKey: key,
      status: "success",
      calledAt: timestampFromMs(calledAt),
    });
    const headers = { authorization: `Bearer ${key}` };
    const called = Date.now() - 2 * day;
    expect((await client.ingest({ trace: trace(called) }, { headers })).status).toBe("ok");
    expect(timestampMs((await storedOf(accountId))[0]!.calledAt!)).toBe(called);
    const error = await refusal(client.ingest({ trace: trace(Date.now() + 3_600_000) }, { headers }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(/^called_at: must not be more than 5 minutes ahead/);
    const invalid = await refusal(client.ingest({ trace: { ...trace(called), calledAt: { seconds: 0n, nanos: 2_000_000_000 } } }, { headers }));
    expect(invalid.rawMessage).toBe("called_at: must be a valid RFC 3339 timestamp");
  });
});

describe("OTLP spans", () => {
  it("are placed at their start when it is within bounds, and at their receipt when it is not (a skewed clock)", async () => {
    const { key, accountId } = await service.createKey("pro");
    const start = Date.now() - 2 * day;
    const farFuture = Date.now() + 3_600_000;
    const answer = await postExport(service.url, key, exportOf([genAiSpan({ startMs: start }), genAiSpan({ startMs: farFuture })]));
    expect(answer.status).toBe(200);
    const traces = await storedOf(accountId);
    expect(traces).toHaveLength(2);
    const placed = traces.find((t) => t.calledAt !== undefined);
    expect(placed && timestampMs(placed.calledAt!)).toBe(start);
    expect(traces.filter((t) => t.calledAt === undefined)).toHaveLength(1);
  });
});
