import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { postTrace, startTestService, traceBody } from "../support/test-service.js";
import { DashboardClient } from "./dashboard-client.js";

let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  await mongo?.close();
});

describe("dashboard on the MongoDB store", () => {
  it("signs up, logs in again, creates a key, and reads back only its own traces", async () => {
    const service = await startTestService({ mongodbUri: mongo.freshUri(), trustProxy: true });
    const ann = new DashboardClient(service.url);
    const ben = new DashboardClient(service.url);
    await ann.signUp("ann@example.com");
    await ben.signUp("ben@example.com");
    expect((await ann.call("AuthService/SignUp", { email: "ann@example.com", password: "another password" })).body.code).toBe(
      "already_exists",
    );

    const key = (await ann.ok("AccountService/CreateKey", { name: "prod" })).plaintext as string;
    const sent = await postTrace(service.url, traceBody(key, { model: "gpt-4o-mini", cost_usd: 0.000123 }), {
      key,
      headers: { "x-forwarded-for": "81.2.69.160" },
    });
    expect(sent.status).toBe(202);

    const again = new DashboardClient(service.url);
    await again.ok("AuthService/LogIn", { email: "ann@example.com", password: "correct horse battery" });
    const traces = (await again.ok("QueryService/ListTraces", {})).page.traces as Record<string, unknown>[];
    expect(traces).toEqual([expect.objectContaining({ model: "gpt-4o-mini", costUsd: 0.000123, country: "GB" })]);
    expect((await again.ok("QueryService/GetUsageTotals", {})).totals.calls).toBe("1");
    expect((await ben.ok("QueryService/ListTraces", {})).page.traces ?? []).toEqual([]);
    expect((await ben.ok("AccountService/ListKeys")).keys ?? []).toEqual([]);
  });
});
