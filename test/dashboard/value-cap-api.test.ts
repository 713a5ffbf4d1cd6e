import { beforeAll, describe, expect, it } from "vitest";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { DashboardClient, type Json } from "./dashboard-client.js";

/**
 * The other group over real sockets (D54): a project sending a new user on every trace, past
 * GROUP_VALUES_PER_DAY, sees the first users and one group flagged other, in QueryService and
 * the read API alike, and the groups add up to the total.
 */
describe("values past the bound per day: the other group in QueryService and GET /v1/metrics", () => {
  let service: TestService;
  let client: DashboardClient;
  let readKey = "";

  beforeAll(async () => {
    service = await startTestService({ groupValuesPerDay: 2 });
    client = new DashboardClient(service.url);
    await client.signUp("cap@example.com");
    const key = (await client.ok("AccountService/CreateKey", { name: "ingest" })).plaintext as string;
    readKey = (await client.ok("AccountService/CreateKey", { name: "read", scope: "KEY_SCOPE_READ" })).plaintext as string;
    for (let i = 0; i < 5; i++) {
      const res = await postTrace(service.url, traceBody(key, { user_id: `user-${i}`, cost_usd: 1 + i }), { key });
      expect(res.status, await res.text()).toBe(202);
    }
  });

  it("GetUsageByGroup answers the tracked users and one other group, and GetUsageByGroupAndDay answers it by day", async () => {
    const answer = await client.ok("QueryService/GetUsageByGroup", { filter: {}, dimension: "DIMENSION_USER" });
    const groups = (answer.groups as Json[]).map((g) => [g.value ?? "", g.other ?? false, Number(g.totals.calls), g.totals.costUsd]);
    expect(groups).toEqual([
      ["", true, 3, 12],
      ["user-1", false, 1, 2],
      ["user-0", false, 1, 1],
    ]);
    expect(answer.totalGroups).toBe("3");
    const days = await client.ok("QueryService/GetUsageByGroupAndDay", { filter: {}, dimension: "DIMENSION_USER", values: ["user-0"], other: true });
    expect((days.days as Json[]).map((d) => [d.value ?? "", d.other ?? false, Number(d.calls)])).toEqual([
      ["user-0", false, 1],
      ["", true, 3],
    ]);
  });

  it("GET /v1/metrics?group_by=user flags the other row, with an empty group", async () => {
    const res = await fetch(`${service.url}/v1/metrics?group_by=user`, { headers: { authorization: `Bearer ${readKey}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: Json[]; total_groups: number };
    expect(body.data.map((r) => [r.group, r.other, r.calls])).toEqual([
      ["", true, 3],
      ["user-1", undefined, 1],
      ["user-0", undefined, 1],
    ]);
    expect(body.total_groups).toBe(3);
  });
});
