import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Status_StatusCode } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { exportOf, genAiSpan, hex, newSpanId, newTraceId, postExport } from "../otlp/otlp-support.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { DashboardClient, type Json } from "./dashboard-client.js";

/**
 * The Errors and Runs views' calls over real sockets (D59): an agent run sent as OTLP spans of one
 * trace, and failures sent to the REST endpoint, read back through QueryService as the page does;
 * bad requests get a specific INVALID_ARGUMENT.
 */
describe("QueryService: error groups and runs, from OTLP and REST traces", () => {
  let service: TestService;
  let client: DashboardClient;
  const traceId = newTraceId();
  const now = Date.now();

  beforeAll(async () => {
    service = await startTestService();
    client = new DashboardClient(service.url);
    await client.signUp("runs@example.com");
    const key = (await client.ok("AccountService/CreateKey", { name: "ingest" })).plaintext as string;
    // An agent's three model calls, one after another, the last failing.
    const spans = [0, 1, 2].map((i) =>
      genAiSpan({
        traceId,
        spanId: newSpanId(),
        startMs: now - 10_000 + i * 2000,
        durationMs: 1500,
        ...(i === 2
          ? {
              status: { code: Status_StatusCode.ERROR, message: "context length 131072 exceeded" },
              exceptionMessage: "context length 131072 exceeded",
            }
          : {}),
      }),
    );
    const answer = await postExport(service.url, key, exportOf(spans));
    expect(answer.status).toBe(200);
    for (const n of [4097, 8193]) {
      const res = await postTrace(service.url, traceBody(key, { status: "error", error: `context length ${n} exceeded` }), { key });
      expect(res.status, await res.text()).toBe(202);
    }
  });

  afterAll(async () => {
    await service?.close();
  });

  it("ListRuns and GetRun answer the OTLP trace as one run, its calls on their spans' times", async () => {
    const runs = (await client.ok("QueryService/ListRuns", { filter: {} })).runs as Json[];
    expect(runs.map((r) => [r.id, Number(r.calls), Number(r.errors ?? 0)])).toEqual([[`otlp:${hex(traceId)}`, 3, 1]]);
    expect(Date.parse(runs[0]!.start)).toBe(now - 10_000);
    expect(Date.parse(runs[0]!.end)).toBe(now - 10_000 + 4000 + 1500);
    const run = await client.ok("QueryService/GetRun", { id: runs[0]!.id });
    expect((run.calls as Json[]).map((c) => [Date.parse(c.calledAt), c.latencyMs, c.status])).toEqual([
      [now - 10_000, 1500, "success"],
      [now - 8000, 1500, "success"],
      [now - 6000, 1500, "error"],
    ]);
  });

  it("GetErrorGroups puts the OTLP failure and the REST ones in one group", async () => {
    const answer = await client.ok("QueryService/GetErrorGroups", { filter: {} });
    expect((answer.groups as Json[]).map((g) => [g.message, Number(g.calls), g.share])).toEqual([["context length <num> exceeded", 3, 1]]);
    expect(answer.totalErrors).toBe("3");
  });

  it("refuses a malformed run id, an unknown one, and a limit past the bound, each saying why", async () => {
    const malformed = await client.call("QueryService/GetRun", { id: "run-1" });
    expect([malformed.status, malformed.body.code]).toEqual([400, "invalid_argument"]);
    expect(malformed.body.message).toContain("id");
    const unknown = await client.call("QueryService/GetRun", { id: "session:nobody" });
    expect([unknown.status, unknown.body.code, unknown.body.message]).toEqual([404, "not_found", 'no run with id "session:nobody"']);
    const tooMany = await client.call("QueryService/GetErrorGroups", { filter: {}, limit: 201 });
    expect([tooMany.status, tooMany.body.code]).toEqual([400, "invalid_argument"]);
    expect(tooMany.body.message).toContain("limit");
    const order = await client.call("QueryService/ListRuns", { filter: {}, order: 7 });
    expect([order.status, order.body.code]).toEqual([400, "invalid_argument"]);
  });
});
