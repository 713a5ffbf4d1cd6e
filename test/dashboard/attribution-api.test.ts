import { beforeAll, describe, expect, it } from "vitest";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { DashboardClient, type Json } from "./dashboard-client.js";

/** Creates a key through the dashboard and sends these traces with it over REST, in order. */
async function send(client: DashboardClient, service: TestService, traces: Record<string, unknown>[]): Promise<string> {
  const key = (await client.ok("AccountService/CreateKey", { name: "attribution" })).plaintext as string;
  for (const fields of traces) {
    const res = await postTrace(service.url, traceBody(key, fields), { key });
    expect(res.status, await res.text()).toBe(202);
  }
  return key;
}

const groupsOf = (answer: Json) => Object.fromEntries((answer.groups ?? []).map((g: Json) => [g.value ?? "", g.totals]));

describe("QueryService attribution: group-by, sorted and searched pages, one trace, each for its own account only", () => {
  let service: TestService;
  let alice: DashboardClient;
  let bob: DashboardClient;

  beforeAll(async () => {
    service = await startTestService();
    alice = new DashboardClient(service.url);
    bob = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    await bob.signUp("bob@example.com");
    await send(alice, service, [
      {
        user_id: "cust-1",
        session_id: "s-1",
        tags: ["checkout"],
        metadata: { feature: "summary" },
        environment: "production",
        cost_usd: 0.5,
        latency_ms: 900,
        model: "gpt-4o",
      },
      {
        user_id: "cust-1",
        session_id: "s-1",
        tags: ["checkout", "beta"],
        metadata: { feature: "chat" },
        environment: "production",
        cost_usd: 0.25,
        latency_ms: 100,
        model: "GPT-4o-mini",
      },
      {
        user_id: "cust-2",
        tags: ["search"],
        metadata: { feature: "chat", service: "billing-api" },
        environment: "staging",
        cost_usd: 2,
        latency_ms: 3000,
        tokens_in: 9000,
        tokens_out: 100,
      },
      {
        user_id: "cust-2",
        status: "error",
        error: `Rate limit exceeded: ${"x".repeat(3000)}`,
        cost_usd: 0,
        latency_ms: 50,
        provider: "anthropic",
        model: "claude-sonnet-4",
      },
      { cost_usd: 0.01, latency_ms: 400 },
    ]);
    // Bob uses the same user ids, tags and metadata: none of his calls may show up in Alice's answers.
    await send(bob, service, [
      { user_id: "cust-1", tags: ["checkout"], metadata: { feature: "summary" }, environment: "production", cost_usd: 100, latency_ms: 10 },
      { user_id: "cust-9", cost_usd: 7 },
    ]);
  });

  it("groups usage by user, tag, metadata key, environment, service and key, highest spend first, with the empty group", async () => {
    const users = await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_USER" });
    expect(users.groups.map((g: Json) => g.value ?? "")).toEqual(["cust-2", "cust-1", ""]);
    expect(users.totalGroups).toBe("3");
    expect(groupsOf(users)["cust-1"]).toMatchObject({ calls: "2", costUsd: 0.75 });
    expect(groupsOf(users)["cust-2"]).toMatchObject({ calls: "2", errors: "1", costUsd: 2 });
    expect(groupsOf(users)["cust-2"].latencyP95Ms).toBeGreaterThanOrEqual(3000);

    const tags = groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_TAG" }));
    expect(Object.keys(tags).sort()).toEqual(["", "beta", "checkout", "search"]);
    expect(tags.checkout).toMatchObject({ calls: "2", costUsd: 0.75 });

    const features = groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_METADATA", metadataKey: "feature" }));
    expect(features).toMatchObject({ chat: { calls: "2", costUsd: 2.25 }, summary: { calls: "1" }, "": { calls: "2" } });

    const keys = groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_METADATA_KEY" }));
    expect(keys).toMatchObject({ feature: { calls: "3" }, service: { calls: "1" }, "": { calls: "2" } });
    expect(groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_SERVICE" }))).toMatchObject({
      "billing-api": { calls: "1" },
      "": { calls: "4" },
    });
    expect(groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_ENVIRONMENT" }))).toMatchObject({
      production: { calls: "2" },
      staging: { calls: "1" },
    });

    const top = await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_USER", limit: 1 });
    expect(top.groups).toHaveLength(1);
    expect(top.totalGroups).toBe("3");
  });

  it("filters every aggregate by user, tag and metadata, and answers the top groups' spend per day", async () => {
    const byUser = { filter: { userId: "cust-1" } };
    expect((await alice.ok("QueryService/GetUsageTotals", byUser)).totals).toMatchObject({ calls: "2", costUsd: 0.75 });
    expect((await alice.ok("QueryService/GetUsageByModel", byUser)).models.map((m: Json) => m.model).sort()).toEqual([
      "GPT-4o-mini",
      "gpt-4o",
    ]);
    const tagsOfUser = groupsOf(await alice.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_TAG", filter: byUser.filter }));
    expect(Object.keys(tagsOfUser).sort()).toEqual(["beta", "checkout"]);
    const filtered = { filter: { tags: ["checkout"], metadata: { feature: "chat" } } };
    expect((await alice.ok("QueryService/GetUsageTotals", filtered)).totals).toMatchObject({ calls: "1", costUsd: 0.25 });

    const days = await alice.ok("QueryService/GetUsageByGroupAndDay", { dimension: "DIMENSION_USER", values: ["cust-1", "cust-2"] });
    const today = new Date().toISOString().slice(0, 10);
    expect(days.days).toEqual([
      { day: today, value: "cust-1", calls: "2", costUsd: 0.75 },
      { day: today, value: "cust-2", calls: "2", costUsd: 2 },
    ]);
  });

  it("sorts traces by cost, latency or tokens either way and pages them with cursors", async () => {
    const costs = async (order: string, ascending: boolean) => {
      const seen: number[] = [];
      let cursor = "";
      do {
        const page = (await alice.ok("QueryService/ListTraces", { order, ascending, pageSize: 2, cursor })).page;
        seen.push(...page.traces.map((t: Json) => t.costUsd ?? 0));
        cursor = page.nextCursor ?? "";
      } while (cursor);
      return seen;
    };
    expect(await costs("TRACE_ORDER_COST", false)).toEqual([2, 0.5, 0.25, 0.01, 0]);
    expect(await costs("TRACE_ORDER_COST", true)).toEqual([0, 0.01, 0.25, 0.5, 2]);
    const byLatency = (await alice.ok("QueryService/ListTraces", { order: "TRACE_ORDER_LATENCY" })).page.traces.map(
      (t: Json) => t.latencyMs,
    );
    expect(byLatency).toEqual([3000, 900, 400, 100, 50]);
    const byTokens = (await alice.ok("QueryService/ListTraces", { order: "TRACE_ORDER_TOKENS", pageSize: 1 })).page.traces;
    expect(byTokens[0].tokensIn).toBe(9000);
    // A cursor is for the order it was made with.
    const next = (await alice.ok("QueryService/ListTraces", { order: "TRACE_ORDER_COST", pageSize: 1 })).page.nextCursor;
    expect((await alice.call("QueryService/ListTraces", { order: "TRACE_ORDER_LATENCY", cursor: next })).body.code).toBe(
      "invalid_argument",
    );
  });

  it("searches by model substring ignoring case and by error text", async () => {
    const models = (await alice.ok("QueryService/ListTraces", { filter: { modelContains: "gpt-4O" } })).page.traces.map(
      (t: Json) => t.model,
    );
    expect(models.sort()).toEqual(["GPT-4o-mini", "gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-2024-08-06"]);
    const errors = (await alice.ok("QueryService/ListTraces", { filter: { errorContains: "RATE LIMIT" } })).page.traces;
    expect(errors).toHaveLength(1);
    expect(errors[0].error).toHaveLength("Rate limit exceeded: ".length + 3000);
    expect((await bob.ok("QueryService/ListTraces", { filter: { errorContains: "rate limit" } })).page.traces ?? []).toEqual([]);
  });

  it("reads one trace with all its fields; another account's trace is not found", async () => {
    const [trace] = (await alice.ok("QueryService/ListTraces", { filter: { metadata: { feature: "summary" } } })).page.traces;
    const got = (await alice.ok("QueryService/GetTrace", { id: trace.id })).trace;
    expect(got).toEqual(trace);
    expect(got).toMatchObject({
      userId: "cust-1",
      sessionId: "s-1",
      tags: ["checkout"],
      metadata: { feature: "summary" },
      environment: "production",
    });
    const answer = await bob.call("QueryService/GetTrace", { id: trace.id });
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe("not_found");
    expect((await alice.call("QueryService/GetTrace", { id: "999999" })).body.code).toBe("not_found");
  });

  it("keeps Bob's groups and pages to Bob", async () => {
    expect(groupsOf(await bob.ok("QueryService/GetUsageByGroup", { dimension: "DIMENSION_USER" }))).toEqual({
      "cust-1": expect.objectContaining({ calls: "1", costUsd: 100 }),
      "cust-9": expect.objectContaining({ calls: "1", costUsd: 7 }),
    });
    expect((await alice.ok("QueryService/ListTraces", { order: "TRACE_ORDER_COST", pageSize: 1 })).page.traces[0].costUsd).toBe(2);
    expect((await alice.ok("QueryService/GetUsageByGroupAndDay", { dimension: "DIMENSION_USER", values: ["cust-9"] })).days ?? []).toEqual(
      [],
    );
  });

  it("downloads what the page shows: the attribute filters apply to the CSV and JSONL downloads too", async () => {
    const jsonl = (await (await alice.get("/app/export/traces.jsonl?user=cust-1&tag=beta")).text()).trim().split("\n");
    expect(jsonl.map((line) => JSON.parse(line).model)).toEqual(["GPT-4o-mini"]);
    const csv = (await (await alice.get("/app/export/traces.csv?meta.feature=chat&q=GPT")).text()).trim().split("\n");
    expect(csv).toHaveLength(3); // header + the two chat calls (GPT-4o-mini and the default gpt-4o-2024-08-06)
    const bad = await alice.get("/app/export/traces.csv?meta.bad%20key=x");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("metadata");
    // Bob's download under Alice's filters holds only his own trace for cust-1.
    expect((await (await bob.get("/app/export/traces.jsonl?user=cust-1")).text()).trim().split("\n")).toHaveLength(1);
  });

  it("refuses malformed requests field by field", async () => {
    const invalid = async (method: string, body: unknown) => {
      const answer = await alice.call(`QueryService/${method}`, body);
      expect(answer.body.code, JSON.stringify(body)).toBe("invalid_argument");
      return answer.body.message ?? "";
    };
    expect(await invalid("GetUsageByGroup", {})).toContain("dimension");
    expect(await invalid("GetUsageByGroup", { dimension: "DIMENSION_METADATA" })).toContain("metadata_key");
    expect(await invalid("GetUsageByGroup", { dimension: "DIMENSION_USER", metadataKey: "feature" })).toContain("metadata_key");
    expect(await invalid("GetUsageByGroup", { dimension: "DIMENSION_USER", limit: 5000 })).toContain("limit");
    expect(await invalid("GetUsageByGroup", { dimension: 99 })).toContain("dimension");
    expect(await invalid("GetUsageByGroupAndDay", { dimension: "DIMENSION_USER", values: [] })).toContain("values");
    expect(await invalid("ListTraces", { filter: { metadata: { "bad key!": "x" } } })).toContain("metadata");
    expect(await invalid("ListTraces", { order: 42 })).toContain("order");
    expect(await invalid("GetTrace", { id: "" })).toContain("id");
    const anonymous = new DashboardClient(service.url);
    for (const method of ["GetUsageByGroup", "GetUsageByGroupAndDay", "GetTrace"])
      expect((await anonymous.call(`QueryService/${method}`, {})).status).toBe(401);
  });
});
