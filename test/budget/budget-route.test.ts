import { create, fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AlertKind,
  type AlertRule,
  AlertRuleSchema,
  AlertScopeKind,
  AlertWindowKind,
  BudgetStatusSchema,
} from "../../gen/calltrace/v1/alert_pb.js";
import { mintApiKey } from "../../src/auth/api-key.js";
import { zonedMidnight } from "../../src/alerts/evaluation/alert-window.js";
import { newId } from "../../src/store/ids.js";
import { openApiDocument } from "../../src/openapi/openapi-document.js";
import { conformanceChecker } from "../openapi/conformance.js";
import { projectWithKeys, readGet } from "../read-api/read-support.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

// GET /v1/budget over real HTTP against the real service: the figures equal the sums of the
// traces sent by concurrent clients, the windows are the project's calendar, and every refusal
// is the ingest path's.
const expectConforms = conformanceChecker(openApiDocument() as Parameters<typeof conformanceChecker>[0]);
const zone = "Asia/Kolkata"; // +05:30: a calendar day that is no whole number of UTC hours
let service: TestService;
let project: Awaited<ReturnType<typeof projectWithKeys>>;

function rule(fields: Exclude<MessageInitShape<typeof AlertRuleSchema>, AlertRule> & { name: string }): AlertRule {
  return create(AlertRuleSchema, {
    id: newId("alr"),
    projectId: project.projectId,
    kind: AlertKind.SPEND,
    budgetUsd: 1,
    thresholdsPercent: [50, 80, 100],
    window: { kind: AlertWindowKind.MONTH },
    scope: { kind: AlertScopeKind.PROJECT },
    ...fields,
  });
}

beforeAll(async () => {
  service = await startTestService({ budgetCacheMs: 300, readPerMinute: 100_000 });
  project = await projectWithKeys(service.store);
  await service.store.teams.updateProject(project.projectId, { timeZone: zone });
});

async function budgetOf(key: string) {
  const response = await readGet(service.url, "/v1/budget", key);
  expect(response.status).toBe(200);
  const body = await expectConforms("GET", "/v1/budget", response);
  return fromJson(BudgetStatusSchema, body as never);
}

describe("GET /v1/budget", () => {
  it("answers every spend budget that counts the key's calls, its spend the sum of the traces that concurrent clients sent", async () => {
    const minted = mintApiKey();
    const other = {
      key: minted.plaintext,
      id: (await service.store.keys.createKey({ accountId: project.projectId, name: "other", hash: minted.hash, prefix: minted.prefix })).id,
    };
    const rules = [
      rule({ name: "project month", budgetUsd: 2 }),
      rule({ name: "this key, day", window: { kind: AlertWindowKind.DAY }, scope: { kind: AlertScopeKind.KEY, value: project.ingest.id } }),
      rule({ name: "another key", scope: { kind: AlertScopeKind.KEY, value: other.id } }),
      rule({ name: "tag chat, rolling 3 h", budgetUsd: 0.05, window: { kind: AlertWindowKind.ROLLING_HOURS, rollingHours: 3 }, scope: { kind: AlertScopeKind.TAG, value: "chat" } }),
      rule({ name: "user u1, week", window: { kind: AlertWindowKind.WEEK }, scope: { kind: AlertScopeKind.USER, value: "u1" } }),
      rule({ name: "team x", scope: { kind: AlertScopeKind.METADATA, metadataKey: "team", value: "x" } }),
      rule({ name: "errors", kind: AlertKind.ERRORS, windowMinutes: 5, errorRatePercent: 10 }),
    ];
    for (const r of rules) await service.store.alerts.createRule(r);
    expect((await budgetOf(project.ingest.key)).budgets.every((b) => b.spendUsd === 0)).toBe(true);

    // Eight clients at once, 20 traces each, with known costs, tags, users and metadata.
    const sent: { cost: number; tags: string[]; user?: string; team?: string }[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        for (let i = 0; i < 20; i++) {
          const trace = {
            cost: (client * 20 + i + 1) / 10_000,
            tags: i % 2 === 0 ? ["chat"] : ["search"],
            ...(i % 3 === 0 ? { user: "u1" } : {}),
            ...(i % 4 === 0 ? { team: "x" } : {}),
          };
          sent.push(trace);
          const body = traceBody(project.ingest.key, {
            cost_usd: trace.cost,
            tags: trace.tags,
            user_id: trace.user,
            metadata: trace.team ? { team: trace.team } : undefined,
          });
          expect((await postTrace(service.url, body, { key: project.ingest.key })).status).toBe(202);
        }
      }),
    );
    // Another key's calls count in the project's budget only.
    expect((await postTrace(service.url, traceBody(other.key, { cost_usd: 0.5 }), { key: other.key })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 350)); // past the cache

    const sum = (f: (t: (typeof sent)[number]) => boolean) => sent.filter(f).reduce((s, t) => s + t.cost, 0);
    const status = await budgetOf(project.ingest.key);
    expect(status.projectId).toBe(project.projectId);
    const byName = new Map(status.budgets.map((b) => [b.name, b]));
    expect([...byName.keys()].sort()).toEqual(["project month", "tag chat, rolling 3 h", "team x", "this key, day", "user u1, week"]);
    const expected: Record<string, number> = {
      "project month": sum(() => true) + 0.5,
      "this key, day": sum(() => true),
      "tag chat, rolling 3 h": sum((t) => t.tags.includes("chat")),
      "user u1, week": sum((t) => t.user === "u1"),
      "team x": sum((t) => t.team === "x"),
    };
    for (const [name, spend] of Object.entries(expected)) {
      const budget = byName.get(name)!;
      expect(budget.spendUsd, name).toBeCloseTo(spend, 9);
      expect(budget.remainingUsd, name).toBeCloseTo(Math.max(0, budget.budgetUsd - spend), 9);
      expect(budget.exceeded, name).toBe(spend >= budget.budgetUsd);
    }
    expect(byName.get("tag chat, rolling 3 h")!.exceeded).toBe(true);
    expect(byName.get("project month")!.exceeded).toBe(false);

    // The calendar windows are the project's zone's: the day, week and month that hold now in Kolkata.
    const now = Date.now();
    const wall = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(now).split("-").map(Number);
    const [y, m, d] = wall as [number, number, number];
    const day = byName.get("this key, day")!;
    expect(timestampMs(day.windowStart!)).toBe(zonedMidnight(y, m, d, zone));
    expect(timestampMs(day.windowEnd!) - timestampMs(day.windowStart!)).toBe(86_400_000);
    expect(new Date(timestampMs(day.windowStart!)).getUTCMinutes()).toBe(30);
    const month = byName.get("project month")!;
    expect(timestampMs(month.windowStart!)).toBe(zonedMidnight(y, m, 1, zone));
    const week = byName.get("user u1, week")!;
    expect(new Date(timestampMs(week.windowStart!) + 5.5 * 3_600_000).getUTCDay()).toBe(1); // a Monday in Kolkata
    const rolling = byName.get("tag chat, rolling 3 h")!;
    expect(now - timestampMs(rolling.windowStart!)).toBeGreaterThanOrEqual(3 * 3_600_000);
    expect(now - timestampMs(rolling.windowStart!)).toBeLessThan(3 * 3_600_000 + 15 * 60_000 + 5_000);

    // The other key sees the project's budget and its own, not this key's.
    const theirs = await budgetOf(other.key);
    expect(theirs.budgets.map((b) => b.name).sort()).toEqual(["another key", "project month", "tag chat, rolling 3 h", "team x", "user u1, week"]);
    expect(theirs.budgets.find((b) => b.name === "another key")!.spendUsd).toBeCloseTo(0.5, 9);
  });

  it("reuses one key's answer within the cache, and measures again after it", async () => {
    const first = await budgetOf(project.ingest.key);
    const second = await budgetOf(project.ingest.key);
    expect(timestampMs(second.measuredAt!)).toBe(timestampMs(first.measuredAt!));
    await new Promise((r) => setTimeout(r, 350));
    expect(timestampMs((await budgetOf(project.ingest.key)).measuredAt!)).toBeGreaterThan(timestampMs(first.measuredAt!));
  });

  it("refuses as ingest does: no key, an unknown, a read or a revoked key is the same 401; another method is 405", async () => {
    const revoked = await service.createKey();
    await service.store.keys.revokeKey(revoked.id);
    await new Promise((r) => setTimeout(r, 2100)); // the key cache forgets within 2 s
    for (const key of [undefined, "ct_unknownunknownunknownunknownunknown", project.read.key, revoked.key]) {
      const response = await readGet(service.url, "/v1/budget", key);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      expect(await expectConforms("GET", "/v1/budget", response)).toEqual({ error: "Unauthorized", message: "Invalid API key" });
    }
    const post = await fetch(`${service.url}/v1/budget`, { method: "POST", headers: { authorization: `Bearer ${project.ingest.key}` } });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
  });
});

describe("GET /v1/budget's read window", () => {
  it("counts against READ_PER_MINUTE, with the rate-limit headers, and answers 429 past it", async () => {
    const limited = await startTestService({ readPerMinute: 3 });
    const { key } = await limited.createKey();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await readGet(limited.url, "/v1/budget", key);
      statuses.push(response.status);
      expect(response.headers.get("x-ratelimit-limit")).toBe("3");
      if (response.status === 429) {
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        const body = (await response.json()) as { error: string; retry_after: number };
        expect(body.error).toBe("Rate limit exceeded");
      } else await response.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    // Ingest still works: the read window is the key's own.
    expect((await postTrace(limited.url, traceBody(key), { key })).status).toBe(202);
  });
});
