import { beforeAll, describe, expect, it } from "vitest";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { DashboardClient } from "./dashboard-client.js";

const password = "correct horse battery";

/** Creates a key through the dashboard and sends traces with it; answers the key and its id. */
async function keyWithTraces(client: DashboardClient, service: TestService, name: string, traces: Record<string, unknown>[]) {
  const created = await client.ok("AccountService/CreateKey", { name });
  const key = created.plaintext as string;
  for (const overrides of traces) {
    const { forwardedFor, ...fields } = overrides;
    const res = await postTrace(service.url, traceBody(key, fields), {
      key,
      headers: forwardedFor ? { "x-forwarded-for": String(forwardedFor) } : {},
    });
    expect(res.status).toBe(202);
  }
  return { key, id: created.key.id as string };
}

describe("dashboard API: accounts, sessions and isolation", () => {
  let service: TestService;
  let alice: DashboardClient;
  let bob: DashboardClient;
  let aliceKey: { key: string; id: string };
  let bobKey: { key: string; id: string };

  beforeAll(async () => {
    service = await startTestService({ trustProxy: true });
    alice = new DashboardClient(service.url);
    bob = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    await bob.signUp("Bob@Example.com");
    aliceKey = await keyWithTraces(alice, service, "alice-prod", [
      { model: "gpt-4o", cost_usd: 0.0042, forwardedFor: "8.8.8.8" },
      { provider: "anthropic", model: "claude-sonnet-4", status: "error", error: "overloaded", cost_usd: 0, forwardedFor: "81.2.69.160" },
    ]);
    bobKey = await keyWithTraces(bob, service, "bob-prod", [
      { provider: "gemini", model: "gemini-2.5-pro", cost_usd: 0.5, latency_ms: 9000, forwardedFor: "2a00:1450:4001::1" },
    ]);
  });

  it("sign-up sets an HttpOnly, SameSite=Strict session cookie and a readable CSRF cookie", () => {
    const session = alice.setCookieHeaders.find((c) => c.startsWith("ct_session="))!;
    const csrf = alice.setCookieHeaders.find((c) => c.startsWith("ct_csrf="))!;
    expect(session).toMatch(/; HttpOnly/);
    expect(session).toMatch(/; SameSite=Strict/);
    expect(session).not.toMatch(/; Secure/); // plain HTTP here; Secure is set under TLS
    expect(csrf).toMatch(/; SameSite=Strict/);
    expect(csrf).not.toMatch(/HttpOnly/);
  });

  it("behind a TLS-terminating proxy (TRUST_PROXY, X-Forwarded-Proto: https) the cookies are Secure", async () => {
    const viaProxy = new DashboardClient(service.url);
    await viaProxy.call("AuthService/LogIn", { email: "alice@example.com", password }, { headers: { "x-forwarded-proto": "https" } });
    expect(viaProxy.setCookieHeaders).toHaveLength(2);
    for (const cookie of viaProxy.setCookieHeaders) expect(cookie).toMatch(/; Secure$/);
  });

  it("GetSession tells who is signed in (emails compare case-insensitively) and whether sign-up is open", async () => {
    expect((await bob.ok("AuthService/GetSession")).session.email).toBe("bob@example.com");
    const anonymous = await new DashboardClient(service.url).ok("AuthService/GetSession");
    expect(anonymous).toEqual({ signupOpen: true });
  });

  it("sign-up refuses a taken email (saying to log in), a malformed email and a short password", async () => {
    const other = new DashboardClient(service.url);
    const taken = await other.call(
      "AuthService/SignUp",
      { email: "ALICE@example.com", password: "another long password" },
      { forwardedFor: "203.0.113.8" },
    );
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: "already_exists", message: "an account with this email exists already: log in instead" });
    expect(other.cookies.has("ct_session")).toBe(false);
    expect((await other.call("AuthService/SignUp", { email: "not-an-email", password })).body.code).toBe("invalid_argument");
    expect((await other.call("AuthService/SignUp", { email: "carol@example.com", password: "short" })).body.code).toBe("invalid_argument");
  });

  it("a retry of a sign-up that created the account (same email and password) logs in instead of answering 409", async () => {
    // From their own address: the sign-up limit counts per address.
    const forwardedFor = "203.0.113.7";
    const first = new DashboardClient(service.url);
    expect((await first.call("AuthService/SignUp", { email: "erin@example.com", password }, { forwardedFor })).status).toBe(200);
    const retry = new DashboardClient(service.url);
    const answer = await retry.call("AuthService/SignUp", { email: "Erin@example.com", password }, { forwardedFor });
    expect(answer.status).toBe(200);
    expect(answer.body.session).toMatchObject({
      email: "erin@example.com",
      accountId: (await first.ok("AuthService/GetSession")).session.accountId,
    });
    expect((await retry.ok("AuthService/GetSession")).session.email).toBe("erin@example.com");
  });

  it("each account lists only its own keys and traces, on every query", async () => {
    const aliceTraces = (await alice.ok("QueryService/ListTraces", {})).page.traces as Record<string, unknown>[];
    expect(aliceTraces.map((t) => t.model).sort()).toEqual(["claude-sonnet-4", "gpt-4o"]);
    expect(aliceTraces.every((t) => t.keyId === aliceKey.id)).toBe(true);
    const bobTraces = (await bob.ok("QueryService/ListTraces", {})).page.traces as Record<string, unknown>[];
    expect(bobTraces.map((t) => t.model)).toEqual(["gemini-2.5-pro"]);

    expect((await alice.ok("AccountService/ListKeys")).keys.map((k: { id: string }) => k.id)).toEqual([aliceKey.id]);
    expect((await alice.ok("QueryService/GetUsageTotals", {})).totals).toMatchObject({ calls: "2", errors: "1" });
    expect((await bob.ok("QueryService/GetUsageTotals", {})).totals).toMatchObject({ calls: "1", costUsd: 0.5 });
    expect((await alice.ok("QueryService/GetUsageByModel", {})).models.map((m: { model: string }) => m.model).sort()).toEqual([
      "claude-sonnet-4",
      "gpt-4o",
    ]);
    expect((await alice.ok("QueryService/GetUsageByDay", {})).days.map((d: { model: string }) => d.model).sort()).toEqual([
      "claude-sonnet-4",
      "gpt-4o",
    ]);
    const aliceDays = (await alice.ok("QueryService/GetUsageByDayTotals", {})).days as { totals: { calls: string; errors: string } }[];
    expect(aliceDays.map((d) => d.totals)).toMatchObject([{ calls: "2", errors: "1" }]);
    expect((await bob.ok("QueryService/GetUsageByDayTotals", { filter: { keyId: aliceKey.id } })).days ?? []).toEqual([]);
    const lastDay = { since: new Date(Date.now() - 86_400_000).toISOString() };
    const aliceHours = (await alice.ok("QueryService/GetUsageByHourTotals", { filter: lastDay })).hours as {
      hour: string;
      totals: Record<string, string>;
    }[];
    expect(aliceHours.map((h) => h.totals)).toMatchObject([{ calls: "2", errors: "1" }]);
    expect(aliceHours[0]!.hour).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00Z$/);
    expect((await bob.ok("QueryService/GetUsageByHourTotals", { filter: { ...lastDay, keyId: aliceKey.id } })).hours ?? []).toEqual([]);
    const noSince = await alice.call("QueryService/GetUsageByHourTotals", { filter: {} });
    expect(noSince.body).toMatchObject({ code: "invalid_argument", message: "filter.since: required for usage by hour" });
    const tooLong = await alice.call("QueryService/GetUsageByHourTotals", {
      filter: { since: "2026-01-01T00:00:00Z", until: "2026-01-03T00:00:01Z" },
    });
    expect(tooLong.body).toMatchObject({
      code: "invalid_argument",
      message: "filter: usage by hour covers at most 48 hours from since to until (or now)",
    });
    expect((await alice.ok("QueryService/GetUsageByCountry", {})).countries.map((c: { country: string }) => c.country).sort()).toEqual([
      "GB",
      "US",
    ]);
    expect((await bob.ok("QueryService/GetUsageByCountry", {})).countries.map((c: { country: string }) => c.country)).toEqual(["IE"]);
    const buckets = (await bob.ok("QueryService/GetLatencyHistogram", {})).buckets as { calls?: string }[];
    expect(buckets.reduce((sum, b) => sum + Number(b.calls ?? 0), 0)).toBe(1);
    expect((await alice.ok("AccountService/GetAccount")).callsThisMonth).toBe("2");
  });

  it("naming another account's key in a filter matches nothing", async () => {
    const filter = { keyId: bobKey.id };
    expect((await alice.ok("QueryService/ListTraces", { filter })).page.traces ?? []).toEqual([]);
    expect((await alice.ok("QueryService/GetUsageTotals", { filter })).totals.calls ?? "0").toBe("0");
    expect((await alice.ok("QueryService/GetUsageByModel", { filter })).models ?? []).toEqual([]);
    expect((await alice.ok("QueryService/GetUsageByCountry", { filter })).countries ?? []).toEqual([]);
  });

  it("an account cannot revoke another account's key", async () => {
    const answer = await alice.call("AccountService/RevokeKey", { keyId: bobKey.id });
    expect(answer.body.code).toBe("not_found");
    const res = await postTrace(service.url, traceBody(bobKey.key), { key: bobKey.key });
    expect(res.status).toBe(202);
  });

  it("pages follow the cursor, newest first, without overlap, and the last page has no cursor", async () => {
    const total = Number((await bob.ok("QueryService/GetUsageTotals", {})).totals.calls);
    expect(total).toBeGreaterThanOrEqual(2);
    const seen: { id: string; receivedAt: string }[] = [];
    let cursor = "";
    for (let page = 0; page < total + 1; page++) {
      const answer = (await bob.ok("QueryService/ListTraces", { pageSize: 1, cursor })).page;
      seen.push(...answer.traces);
      cursor = answer.nextCursor ?? "";
      if (!cursor) break;
    }
    expect(cursor).toBe("");
    expect(seen).toHaveLength(total);
    expect(new Set(seen.map((t) => t.id)).size).toBe(total);
    expect([...seen].sort((a, b) => b.receivedAt.localeCompare(a.receivedAt))).toEqual(seen);
  });

  it("the download holds only the caller's traces, filtered, with a CSV header", async () => {
    const res = await alice.get("/app/export/traces.csv?status=error");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toMatch(/attachment; filename="calltrace-traces-.*\.csv"/);
    const lines = (await res.text()).trim().split("\n");
    expect(lines[0]).toContain("received_at");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain("overloaded");
    const jsonl = (await (await bob.get("/app/export/traces.jsonl")).text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(jsonl.length).toBeGreaterThanOrEqual(1);
    expect(jsonl.every((t) => t.key_id === bobKey.id)).toBe(true);
    expect((await new DashboardClient(service.url).get("/app/export/traces.csv")).status).toBe(401);
  });

  it("calls without a session are unauthenticated", async () => {
    const anonymous = new DashboardClient(service.url);
    for (const method of [
      "QueryService/ListTraces",
      "QueryService/GetUsageTotals",
      "AccountService/ListKeys",
      "AccountService/CreateKey",
    ]) {
      expect((await anonymous.call(method, { name: "x" })).status).toBe(401);
    }
    // Authentication comes before validation: a stranger's malformed request learns nothing more.
    expect((await anonymous.call("QueryService/ListTraces", { pageSize: 100000 })).status).toBe(401);
    expect((await alice.call("QueryService/ListTraces", { pageSize: 100000 })).body.code).toBe("invalid_argument");
  });

  it("CSRF: a call with the session cookie but without the session's token in x-csrf-token is refused", async () => {
    const before = (await alice.ok("AccountService/ListKeys")).keys.length;
    for (const csrf of [false, "forged-token", bob.cookies.get("ct_csrf")!] as const) {
      const answer = await alice.call("AccountService/CreateKey", { name: "planted" }, { csrf });
      expect(answer.status).toBe(403);
      expect(answer.body.code).toBe("permission_denied");
      expect((await alice.call("QueryService/ListTraces", {}, { csrf })).status).toBe(403);
    }
    expect((await alice.ok("AccountService/ListKeys")).keys.length).toBe(before);
  });

  it("CSRF: a request from another site's page is refused, even with the token", async () => {
    const answer = await alice.call("AccountService/CreateKey", { name: "planted" }, { origin: "https://evil.example" });
    expect(answer.body.code).toBe("permission_denied");
    const login = await new DashboardClient(service.url).call(
      "AuthService/LogIn",
      { email: "alice@example.com", password },
      { origin: "https://evil.example" },
    );
    expect(login.body.code).toBe("permission_denied");
    expect((await alice.get("/app/export/traces.csv", { origin: "https://evil.example" })).status).toBe(403);
  });

  it("log-out ends the session on the server, not only in the browser", async () => {
    const carol = new DashboardClient(service.url);
    await carol.signUp("carol@example.com");
    const stolen = new Map(carol.cookies);
    await carol.ok("AuthService/LogOut");
    expect(carol.cookies.size).toBe(0);
    const replay = new DashboardClient(service.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    expect((await replay.call("AccountService/ListKeys")).status).toBe(401);
  });

  it("a created key works for ingest until it is revoked, then gets 401 within 5 seconds", async () => {
    const created = await alice.ok("AccountService/CreateKey", { name: "rotating" });
    expect(created.plaintext).toMatch(/^ct_[0-9A-Za-z]{40}$/);
    expect(created.key.prefix).toBe(created.plaintext.slice(3, 11));
    const key = created.plaintext as string;
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    const listed = (await alice.ok("AccountService/ListKeys")).keys.find((k: { id: string }) => k.id === created.key.id);
    expect(listed.lastUsedAt).toBeDefined();
    expect(listed.callsThisMonth).toBe("1");
    expect(JSON.stringify(listed)).not.toContain(key);

    const revoked = await alice.ok("AccountService/RevokeKey", { keyId: created.key.id });
    expect(revoked.key.revokedAt).toBeDefined();
    const deadline = Date.now() + 5000;
    let status = 0;
    while (Date.now() < deadline && status !== 401) {
      status = (await postTrace(service.url, traceBody(key), { key })).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
  });

  it("an unknown cursor is an invalid argument, not a server error", async () => {
    expect((await alice.call("QueryService/ListTraces", { cursor: "bm90LWEtY3Vyc29y" })).body.code).toBe("invalid_argument");
  });
});

describe("dashboard API: log-in limits and session lifetime", () => {
  it("after 5 failed log-ins for an email from one address, even the right password is refused for a while; other emails still log in", async () => {
    const service = await startTestService({ trustProxy: true });
    const owner = new DashboardClient(service.url);
    await owner.signUp("dave@example.com");
    const attacker = new DashboardClient(service.url);
    const from = { forwardedFor: "203.0.113.7" };
    for (let i = 0; i < 5; i++) {
      const answer = await attacker.call("AuthService/LogIn", { email: "dave@example.com", password: `guess-number-${i}` }, from);
      expect(answer.body.code).toBe("unauthenticated");
    }
    const blocked = await attacker.call("AuthService/LogIn", { email: "dave@example.com", password }, from);
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe("resource_exhausted");
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Same address, other email: judged on its own (here: wrong), not locked out by the other email's failures.
    expect((await attacker.call("AuthService/LogIn", { email: "erin@example.com", password }, from)).body.code).toBe("unauthenticated");
    // The owner from their own address is not locked out either.
    expect((await owner.call("AuthService/LogIn", { email: "dave@example.com", password }, { forwardedFor: "198.51.100.20" })).status).toBe(
      200,
    );
  });

  it("a session stops working when SESSION_TTL has passed", async () => {
    const service = await startTestService({ sessionTtl: 1 });
    const client = new DashboardClient(service.url);
    await client.signUp("frank@example.com");
    expect(client.setCookieHeaders.find((c) => c.startsWith("ct_session="))).toMatch(/Max-Age=1;/);
    expect((await client.call("AccountService/ListKeys")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const expired = await client.call("AccountService/ListKeys");
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe("unauthenticated");
  });

  it("with SIGNUP_OPEN=false, sign-up is refused and the page is told so", async () => {
    const service = await startTestService({ signupOpen: false });
    const client = new DashboardClient(service.url);
    expect((await client.ok("AuthService/GetSession")).signupOpen ?? false).toBe(false);
    expect((await client.call("AuthService/SignUp", { email: "gina@example.com", password })).body.code).toBe("permission_denied");
  });
});

describe("dashboard web app serving", () => {
  it("/ redirects to the app; app routes answer the page with a strict CSP; files outside the build are not served", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    const root = await client.get("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/app/");
    for (const path of ["/app/", "/app/traces", "/app/settings?x=1"]) {
      const res = await client.get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(await res.text()).toContain('<div id="root">');
    }
    const outside = await client.get("/app/..%2f..%2fpackage.json");
    expect(await outside.text()).not.toContain('"dependencies"');
    expect((await client.get("/nowhere")).status).toBe(404);
  });
});
