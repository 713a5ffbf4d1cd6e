import { describe, expect, it } from "vitest";
import { postTrace, startTestService, traceBody } from "../support/test-service.js";
import { DashboardClient } from "./dashboard-client.js";

const password = "correct horse battery";
const codes = (answers: { status: number; body: { code?: string } }[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const code = a.status === 200 ? "ok" : (a.body.code ?? String(a.status));
    counts[code] = (counts[code] ?? 0) + 1;
  }
  return counts;
};

describe("dashboard limits: log-in", () => {
  it("120 simultaneous guesses for one email from one address: only 5 passwords are checked, and the owner still logs in from home at once", async () => {
    // A slow-down this long would show: the owner's log-in must not get it (nor a refusal).
    const service = await startTestService({ trustProxy: true, loginSlowDownMs: 20_000 });
    await new DashboardClient(service.url).signUp("victim@example.com");
    const attacker = new DashboardClient(service.url);
    const guesses = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        attacker.call(
          "AuthService/LogIn",
          { email: "victim@example.com", password: `guess-${i}-xxxxxxxx` },
          { forwardedFor: "203.0.113.66" },
        ),
      ),
    );
    // Only an attempt whose password was checked can answer "unauthenticated".
    expect(codes(guesses)).toEqual({ unauthenticated: 5, resource_exhausted: 115 });
    expect(guesses.every((g) => g.status === 401 || (g.status === 429 && Number(g.headers.get("retry-after")) > 0))).toBe(true);

    const owner = new DashboardClient(service.url);
    const started = Date.now();
    const login = await owner.call("AuthService/LogIn", { email: "victim@example.com", password }, { forwardedFor: "198.51.100.9" });
    expect(login.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The attacker's address stays locked out, even with the right password.
    expect(
      (await attacker.call("AuthService/LogIn", { email: "victim@example.com", password }, { forwardedFor: "203.0.113.66" })).status,
    ).toBe(429);
  });

  it("one address guessing many emails is refused past its own limit; other addresses are not", async () => {
    const service = await startTestService({ trustProxy: true, loginMaxPerAddress: 8 });
    await new DashboardClient(service.url).signUp("someone@example.com");
    const client = new DashboardClient(service.url);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.call("AuthService/LogIn", { email: `user${i}@example.com`, password }, { forwardedFor: "203.0.113.5" }),
      ),
    );
    expect(codes(answers)).toEqual({ unauthenticated: 8, resource_exhausted: 12 });
    expect(
      (await client.call("AuthService/LogIn", { email: "someone@example.com", password }, { forwardedFor: "203.0.113.6" })).status,
    ).toBe(200);
  });

  // Eight scrypt hashes and three 1.2 s slow-downs: 8 s in CI, past 30 s on a machine at load 20 (as the flood test below).
  it("guesses from many addresses slow the email's log-ins down past the soft ceiling, but never lock the owner out", { timeout: 90_000 }, async () => {
    const service = await startTestService({ trustProxy: true, loginSlowPerEmail: 4, loginSlowDownMs: 1200 });
    await new DashboardClient(service.url).signUp("popular@example.com");
    const botnet = new DashboardClient(service.url);
    for (let i = 0; i < 6; i++) {
      const answer = await botnet.call(
        "AuthService/LogIn",
        { email: "popular@example.com", password: `bot-guess-${i}` },
        { forwardedFor: `192.0.2.${i + 1}` },
      );
      expect(answer.body.code).toBe("unauthenticated");
    }
    const started = Date.now();
    const owner = await new DashboardClient(service.url).call(
      "AuthService/LogIn",
      { email: "popular@example.com", password },
      { forwardedFor: "198.51.100.77" },
    );
    expect(owner.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1200);
  });
});

describe("dashboard limits: sign-up", () => {
  it("refuses emails that cannot be delivered: a@b, root@localhost, an IP address as domain", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    for (const email of ["a@b", "root@localhost", "x@127.0.0.1", "two@@example.com", "dot.@example.com", "no-tld@example.c0m"]) {
      const answer = await client.call("AuthService/SignUp", { email, password });
      expect(answer.body.code, email).toBe("invalid_argument");
    }
    expect((await client.call("AuthService/SignUp", { email: "Real.Person+tag@Mail.Example.co.uk", password })).status).toBe(200);
  });

  it("limits sign-ups per address and in all, every attempt counting (a taken email too)", async () => {
    const service = await startTestService({ trustProxy: true, signupMaxPerAddress: 3, signupMaxTotal: 5 });
    const from = (address: string) => ({ forwardedFor: address });
    const client = new DashboardClient(service.url);
    expect((await client.call("AuthService/SignUp", { email: "s1@example.com", password }, from("203.0.113.1"))).status).toBe(200);
    // A taken email with another password (the same one logs in, B7) is refused, and counts.
    expect((await client.call("AuthService/SignUp", { email: "s1@example.com", password: "not the first password" }, from("203.0.113.1"))).body.code).toBe(
      "already_exists",
    );
    expect((await client.call("AuthService/SignUp", { email: "s2@example.com", password }, from("203.0.113.1"))).status).toBe(200);
    const fourth = await client.call("AuthService/SignUp", { email: "s3@example.com", password }, from("203.0.113.1"));
    expect(fourth.status).toBe(429);
    expect(fourth.body.message).toContain("too many sign-ups");
    expect(Number(fourth.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await client.call("AuthService/SignUp", { email: "s4@example.com", password }, from("203.0.113.2"))).status).toBe(200);
    expect((await client.call("AuthService/SignUp", { email: "s5@example.com", password }, from("203.0.113.3"))).status).toBe(200);
    // Five taken in all: a sixth address is refused too.
    expect((await client.call("AuthService/SignUp", { email: "s6@example.com", password }, from("203.0.113.4"))).status).toBe(429);
  });

  it("a flood of 60 simultaneous sign-ups from 60 addresses cannot starve a log-in: password hashing is capped and log-ins go first", {
    timeout: 90_000,
  }, async () => {
    const service = await startTestService({ trustProxy: true });
    await new DashboardClient(service.url).signUp("regular@example.com");
    // The machine is shared and scrypt's speed varies: the bound is relative to a quiet log-in now.
    const quietStart = Date.now();
    expect(
      (
        await new DashboardClient(service.url).call(
          "AuthService/LogIn",
          { email: "regular@example.com", password },
          { forwardedFor: "198.51.100.1" },
        )
      ).status,
    ).toBe(200);
    const quietMs = Date.now() - quietStart;
    const flood = Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        new DashboardClient(service.url).call(
          "AuthService/SignUp",
          { email: `flood${i}@example.com`, password },
          { forwardedFor: `10.9.${i}.1` },
        ),
      ),
    );
    await new Promise((r) => setTimeout(r, 100)); // the flood is queued
    const started = Date.now();
    const login = await new DashboardClient(service.url).call(
      "AuthService/LogIn",
      { email: "regular@example.com", password },
      { forwardedFor: "198.51.100.1" },
    );
    const loginMs = Date.now() - started;
    const answers = await flood;
    expect(login.status).toBe(200);
    // One hash for the log-in plus at most one sign-up hash ahead of it, with room for a noisy machine;
    // without the cap it waited for the whole flood (21.9 s for 60 sign-ups).
    expect(loginMs).toBeLessThan(4 * quietMs + 500);
    const counts = codes(answers);
    expect(Object.keys(counts).sort()).toEqual(["ok", "resource_exhausted"]);
    expect(answers.filter((a) => a.status === 429).every((a) => /busy creating accounts/.test(a.body.message!))).toBe(true);
  });
});

describe("dashboard limits: keys per plan", () => {
  it("a free account gets at most 10 active keys, however many are asked for at once; revoking one makes room", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    await client.signUp("keys@example.com");
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => client.call("AccountService/CreateKey", { name: `k${i}` })));
    expect(codes(answers)).toEqual({ ok: 10, failed_precondition: 20 });
    const refused = answers.find((a) => a.status !== 200)!;
    expect(refused.body.message).toContain("the free plan allows 10 active keys per project");
    const account = await client.ok("AccountService/GetAccount");
    expect(account).toMatchObject({ planMaxKeys: "10", activeKeys: "10" });
    const first = answers.find((a) => a.status === 200)!.body as { key: { id: string } };
    await client.ok("AccountService/RevokeKey", { keyId: first.key.id });
    expect((await client.call("AccountService/CreateKey", { name: "after-revoke" })).status).toBe(200);
    expect((await client.call("AccountService/CreateKey", { name: "one-too-many" })).body.code).toBe("failed_precondition");
  });

  it("PLANS_FILE sets max_keys per plan", async () => {
    const service = await startTestService({ plans: { free: { per_minute: 10, per_month: 100, max_keys: 2 } } });
    const client = new DashboardClient(service.url);
    await client.signUp("two@example.com");
    await client.ok("AccountService/CreateKey", { name: "a" });
    await client.ok("AccountService/CreateKey", { name: "b" });
    expect((await client.call("AccountService/CreateKey", { name: "c" })).body.message).toContain("the free plan allows 2 active keys");
  });
});

describe("dashboard: downloads", () => {
  it("CSV writes plain decimals, never exponent notation", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    await client.signUp("csv@example.com");
    const key = (await client.ok("AccountService/CreateKey", { name: "csv" })).plaintext as string;
    expect((await postTrace(service.url, traceBody(key, { cost_usd: 0.0000004 }), { key })).status).toBe(202);
    const lines = (await (await client.get("/app/export/traces.csv")).text()).trim().split("\n");
    const cost = lines[0]!.split(",").indexOf("cost_usd");
    expect(lines[1]!.split(",")[cost]).toBe("0.0000004");
    expect(lines[1]).not.toMatch(/\de-\d/);
  });
});

describe("dashboard: malformed input", () => {
  it("a malformed session cookie is no cookie: GetSession answers signed out, other calls 401, never 500", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    client.cookies.set("ct_session", "%E0%A4%A");
    client.cookies.set("ct_csrf", "not-the-token");
    const session = await client.call("AuthService/GetSession");
    expect(session.status).toBe(200);
    expect(session.body.session).toBeUndefined();
    expect((await client.call("AccountService/ListKeys")).status).toBe(401);
    expect((await client.call("QueryService/ListTraces", {})).status).toBe(401);
    expect((await client.get("/app/export/traces.csv")).status).toBe(401);
  });

  it("key names are trimmed and a blank one is refused, on create and rename", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    await client.signUp("names@example.com");
    expect((await client.call("AccountService/CreateKey", { name: "    " })).body).toMatchObject({
      code: "invalid_argument",
      message: "name: must not be blank",
    });
    const created = await client.ok("AccountService/CreateKey", { name: "  prod  " });
    expect(created.key.name).toBe("prod");
    expect((await client.call("AccountService/RenameKey", { keyId: created.key.id, name: " \t " })).body.code).toBe("invalid_argument");
    expect((await client.ok("AccountService/RenameKey", { keyId: created.key.id, name: " staging " })).key.name).toBe("staging");
    expect((await client.ok("AccountService/ListKeys")).keys[0].name).toBe("staging");
  });
});

describe("dashboard: account management", () => {
  it("a key can expire: one in the past is refused, one in the future works until then", async () => {
    const service = await startTestService();
    const client = new DashboardClient(service.url);
    await client.signUp("expiry@example.com");
    expect(
      (await client.call("AccountService/CreateKey", { name: "old", expiresAt: new Date(Date.now() - 1000).toISOString() })).body.code,
    ).toBe("invalid_argument");
    const expiresAt = new Date(Date.now() + 2500);
    const created = await client.ok("AccountService/CreateKey", { name: "brief", expiresAt: expiresAt.toISOString() });
    // As instants: the JSON form of a Timestamp drops ".000" when the milliseconds are whole.
    expect(Date.parse(created.key.expiresAt)).toBe(expiresAt.getTime());
    const key = created.plaintext as string;
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    await new Promise((r) => setTimeout(r, expiresAt.getTime() - Date.now() + 100));
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(401);
    expect((await client.ok("AccountService/GetAccount")).activeKeys ?? "0").toBe("0");
  });

  it("changing the password needs the current one and logs out every other session", async () => {
    const service = await startTestService();
    const here = new DashboardClient(service.url);
    await here.signUp("changer@example.com");
    const laptop = new DashboardClient(service.url);
    await laptop.call("AuthService/LogIn", { email: "changer@example.com", password }, { headers: { "user-agent": "Laptop browser" } });
    const sessions = (await here.ok("AccountService/ListSessions")).sessions as { id: string; current?: boolean; userAgent?: string }[];
    expect(sessions).toHaveLength(2);
    expect(sessions.filter((s) => s.current)).toHaveLength(1);
    expect(sessions.map((s) => s.userAgent)).toContain("Laptop browser");
    expect(JSON.stringify(sessions)).not.toContain(here.cookies.get("ct_session")!);

    const wrong = await here.call("AccountService/ChangePassword", {
      currentPassword: "not my password",
      newPassword: "a brand new password",
    });
    expect(wrong.body.code).toBe("permission_denied");
    const changed = await here.ok("AccountService/ChangePassword", { currentPassword: password, newPassword: "a brand new password" });
    expect(changed.otherSessionsEnded).toBe(1);
    expect((await laptop.call("AccountService/ListKeys")).status).toBe(401);
    expect((await here.call("AccountService/ListKeys")).status).toBe(200);
    expect((await new DashboardClient(service.url).call("AuthService/LogIn", { email: "changer@example.com", password })).status).toBe(401);
    expect(
      (await new DashboardClient(service.url).call("AuthService/LogIn", { email: "changer@example.com", password: "a brand new password" }))
        .status,
    ).toBe(200);
  });

  it("log out everywhere ends every session of the user, this one included", async () => {
    const service = await startTestService();
    const one = new DashboardClient(service.url);
    await one.signUp("everywhere@example.com");
    const two = new DashboardClient(service.url);
    await two.ok("AuthService/LogIn", { email: "everywhere@example.com", password });
    expect((await one.ok("AccountService/LogOutEverywhere")).ended).toBe(2);
    expect(one.cookies.size).toBe(0);
    expect((await two.call("AccountService/ListKeys")).status).toBe(401);
  });

  it("deleting the account needs the password; its keys stop working at once and its traces are gone; another account is untouched", async () => {
    const service = await startTestService();
    const doomed = new DashboardClient(service.url);
    await doomed.signUp("doomed@example.com");
    const other = new DashboardClient(service.url);
    await other.signUp("survivor@example.com");
    const doomedKey = (await doomed.ok("AccountService/CreateKey", { name: "d" })).plaintext as string;
    const otherKey = (await other.ok("AccountService/CreateKey", { name: "o" })).plaintext as string;
    for (const key of [doomedKey, otherKey]) expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    // The key is cached as valid right now: deletion must not wait for the cache to expire.
    expect((await postTrace(service.url, traceBody(doomedKey), { key: doomedKey })).status).toBe(202);

    expect((await doomed.call("AccountService/DeleteAccount", { password: "wrong password" })).body.code).toBe("permission_denied");
    const stolen = new Map(doomed.cookies);
    expect((await doomed.call("AccountService/DeleteAccount", { password })).status).toBe(200);
    expect(doomed.cookies.size).toBe(0);
    expect((await postTrace(service.url, traceBody(doomedKey), { key: doomedKey })).status).toBe(401);
    const replay = new DashboardClient(service.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    expect((await replay.call("AccountService/ListKeys")).status).toBe(401);
    expect((await new DashboardClient(service.url).call("AuthService/LogIn", { email: "doomed@example.com", password })).status).toBe(401);
    const accounts = await service.store.teams.projectSummaries();
    expect(accounts.map((a) => a.emails[0])).toEqual(["survivor@example.com"]);
    const left: string[] = [];
    for await (const t of service.store.exportTraces({})) left.push(t.accountId);
    expect(left).toEqual([accounts[0]!.id, accounts[0]!.id].slice(0, left.length));
    expect(left).toHaveLength(1);
    expect((await postTrace(service.url, traceBody(otherKey), { key: otherKey })).status).toBe(202);
  });
});
