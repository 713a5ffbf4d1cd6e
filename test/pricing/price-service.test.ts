import { beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

/** PriceService over the dashboard's Connect endpoint: who may do what, the errors, and a re-price seen through QueryService. */
describe("PriceService", () => {
  let service: TestService;
  let alice: DashboardClient;
  let bob: DashboardClient;
  let project: string;
  let key: string;
  const discount = { provider: "openai", match: "PRICE_MATCH_EXACT", pattern: "gpt-4o", standard: { rates: { input: 1, output: 2 } } };
  const million = { tokens_in: 1_000_000, tokens_out: 1_000_000 };

  beforeAll(async () => {
    service = await startTestService();
    alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    project = alice.project;
    const organizationId = ((await alice.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
    key = (await alice.ok("AccountService/CreateKey", { name: "prod" })).plaintext as string;
    const invitation = await alice.ok("TeamService/CreateInvitation", { organizationId, email: "bob@example.com", role: "ROLE_VIEWER" });
    bob = new DashboardClient(service.url);
    await bob.signUp("bob@example.com");
    await bob.ok("TeamService/AcceptInvitation", { token: String(invitation.url).split("/").pop() });
  });

  it.each([
    [{ ...discount, match: "PRICE_MATCH_REGEX", pattern: "(gpt)\\1" }, "pattern: is not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\1`"],
    [{ ...discount, match: "PRICE_MATCH_REGEX", pattern: "^gpt(?!-mini)" }, "pattern: is not a valid RE2 regular expression"],
    [{ ...discount, standard: { rates: { input: -1, output: 2 } } }, "spec.standard.rates.input: must be greater than or equal to 0"],
    [{ ...discount, provider: "mistral" }, "spec.provider: must be in list"],
    [{ ...discount, match: "PRICE_MATCH_UNSPECIFIED" }, "spec.match"],
    [{ ...discount, effectiveFrom: "2026-02-01T00:00:00Z", effectiveUntil: "2026-01-01T00:00:00Z" }, "effective_until: must be after effective_from"],
  ])("refuses %j with a specific error", async (spec, message) => {
    const answer = await alice.call("PriceService/CreatePrice", { spec });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe("invalid_argument");
    expect(String(answer.body.message)).toContain(message);
  });

  it("admins edit, viewers read and ask which price applies; a re-price turns yesterday's MISMATCH into MATCH", async () => {
    // The client already pays the negotiated price; the server does not know it yet.
    expect((await postTrace(service.url, traceBody(key, { model: "gpt-4o", ...million, cost_usd: 3 }), { key })).status).toBe(202);
    const totals = async () => (await alice.ok("QueryService/GetUsageTotals", { filter: {} })).totals as Json;
    expect((await totals()).mismatchedCalls).toBe("1");

    const denied = await bob.call("PriceService/CreatePrice", { projectId: project, spec: discount });
    expect([denied.status, denied.body.code]).toEqual([403, "permission_denied"]);
    const created = (await alice.ok("PriceService/CreatePrice", { spec: discount })).price as Json;
    expect(created.spec).toEqual(discount);
    expect(((await bob.ok("PriceService/ListPrices", { projectId: project })).prices as Json[]).map((p) => p.id)).toEqual([created.id]);

    const resolve = (model: string) => bob.ok("PriceService/ResolvePrice", { projectId: project, provider: "openai", model });
    expect(await resolve("gpt-4o")).toMatchObject({ custom: { id: created.id }, exampleCostUsd: 3 });
    expect(await resolve("gpt-4o-mini-2024-07-18")).toEqual({ catalogModel: "gpt-4o-mini", exampleCostUsd: 0.75 });
    expect(await resolve("acme-model")).toEqual({});

    // A new call is priced with it at once on this instance.
    expect((await postTrace(service.url, traceBody(key, { model: "gpt-4o", ...million, cost_usd: 3 }), { key })).status).toBe(202);
    expect((await totals()).mismatchedCalls).toBe("1");

    const refused = await bob.call("PriceService/StartReprice", { projectId: project, from: new Date(Date.now() - 3_600_000).toISOString() });
    expect(refused.status).toBe(403);
    const bad = await alice.call("PriceService/StartReprice", { from: new Date(Date.now() + 3_600_000).toISOString() });
    expect([bad.status, bad.body.message]).toEqual([400, "from: must be before until (and before now)"]);
    let job = (await alice.ok("PriceService/StartReprice", { from: new Date(Date.now() - 3_600_000).toISOString() })).job as Json;
    expect(job).toMatchObject({ state: "REPRICE_STATE_RUNNING", total: "2" });
    for (let i = 0; i < 100 && job.state === "REPRICE_STATE_RUNNING"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      job = (await bob.ok("PriceService/GetReprice", { projectId: project, jobId: job.id })).job as Json;
    }
    expect(job).toMatchObject({ state: "REPRICE_STATE_DONE", total: "2", done: "2", changed: "1" });
    expect((await totals()).mismatchedCalls ?? "0").toBe("0");
    const traces = (await alice.ok("QueryService/ListTraces", { filter: {} })).page.traces as Json[];
    expect(traces.map((t) => [t.costUsd, t.serverCostUsd, t.priceCheck])).toEqual([
      [3, 3, "PRICE_CHECK_MATCH"],
      [3, 3, "PRICE_CHECK_MATCH"],
    ]);

    const updated = (await alice.ok("PriceService/UpdatePrice", { priceId: created.id, spec: { ...discount, batch: { rates: { input: 0.5, output: 1 } } } })).price as Json;
    expect(updated.spec.batch).toEqual({ rates: { input: 0.5, output: 1 } });
    expect((await bob.call("PriceService/DeletePrice", { projectId: project, priceId: created.id })).status).toBe(403);
    await alice.ok("PriceService/DeletePrice", { priceId: created.id });
    const gone = await alice.call("PriceService/DeletePrice", { priceId: created.id });
    expect([gone.status, gone.body.message]).toEqual([404, `no price with id "${created.id}"`]);
    expect((await alice.ok("PriceService/ListPrices")).prices ?? []).toEqual([]);
    const audit = (await alice.ok("TeamService/ListAuditLog", { organizationId: ((await alice.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id })).entries as Json[];
    expect(audit.map((e) => e.action).filter((a: string) => a.startsWith("price."))).toEqual(["price.delete", "price.update", "price.reprice", "price.create"]);
  });
});
