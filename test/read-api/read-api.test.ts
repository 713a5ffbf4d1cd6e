import { beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/openapi/openapi-document.js";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { conformanceChecker } from "../openapi/conformance.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { day, projectWithKeys, readGet, seedTraces } from "./read-support.js";

// The read routes over real HTTP against the real service: who is let in, what every refusal says,
// and that each answer is what /openapi.json documents.
const expectConforms = conformanceChecker(openApiDocument() as Parameters<typeof conformanceChecker>[0]);
let service: TestService;
let project: Awaited<ReturnType<typeof projectWithKeys>>;
let other: Awaited<ReturnType<typeof projectWithKeys>>;

beforeAll(async () => {
  service = await startTestService({ readPerMinute: 100_000 });
  project = await projectWithKeys(service.store);
  other = await projectWithKeys(service.store);
  await seedTraces(service.store, project.projectId, project.ingest.id, 230, 5, 1);
  await seedTraces(service.store, other.projectId, other.ingest.id, 40, 5, 2);
});

const unauthorized = { error: "Unauthorized", message: "Invalid API key" };

/** The documented path a request path falls under. */
const documented = (path: string) => (path.startsWith("/v1/runs/") ? "/v1/runs/{id}" : path);

describe("who may read", () => {
  it("a read key reads its project, with the read limit's headers and a request id", async () => {
    for (const path of ["/v1/traces", "/v1/metrics", "/v1/errors", "/v1/runs"]) {
      const response = await readGet(service.url, path, project.read.key);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("x-ratelimit-limit")).toBe("100000");
      expect(Number(response.headers.get("x-ratelimit-remaining"))).toBeLessThan(100_000);
      expect(response.headers.get("x-request-id")).toMatch(/\S/);
      expect(response.headers.get("cache-control")).toBe("no-store");
      const body = (await expectConforms("GET", path, response)) as { data: unknown[] };
      expect(body.data.length).toBeGreaterThan(0);
    }
  });

  it("an ingest key on a read route is 403 naming its scope", async () => {
    for (const path of ["/v1/traces", "/v1/metrics", "/v1/errors", "/v1/runs", "/v1/runs/session:session-1"]) {
      const response = await readGet(service.url, path, project.ingest.key);
      expect(response.status).toBe(403);
      const body = (await expectConforms("GET", documented(path), response)) as { error: string; message: string };
      expect(body.error).toBe("Forbidden");
      expect(body.message).toContain("scope is ingest");
    }
  });

  it("no credentials, an unknown key, a malformed header or a revoked key: the spec's 401, alike", async () => {
    const { read } = await projectWithKeys(service.store);
    expect((await readGet(service.url, "/v1/traces", read.key)).status).toBe(200);
    await service.store.keys.revokeKey(read.id);
    const bodies: unknown[] = [];
    const deadline = Date.now() + 5000; // the key cache forgets a revoked key within 2 s
    let revoked = await readGet(service.url, "/v1/traces", read.key);
    while (revoked.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      revoked = await readGet(service.url, "/v1/traces", read.key);
    }
    for (const response of [
      revoked,
      await readGet(service.url, "/v1/traces"),
      await readGet(service.url, "/v1/metrics", "ct_unknownunknownunknownunknownunknown00"),
      await readGet(service.url, "/v1/metrics", undefined, { authorization: `Basic ${project.read.key}` }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe("Bearer");
      bodies.push(await expectConforms("GET", new URL(response.url).pathname, response));
    }
    expect(bodies).toEqual(Array(4).fill(unauthorized));
  });

  it("a read key on POST /v1/traces gets the spec's 401 and stores nothing", async () => {
    const before = await readGet(service.url, "/v1/metrics", project.read.key).then((r) => r.json());
    const response = await postTrace(service.url, traceBody(project.read.key), { key: project.read.key });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(await response.json()).toEqual(unauthorized);
    expect(await readGet(service.url, "/v1/metrics", project.read.key).then((r) => r.json())).toEqual(before);
  });

  it("another project's id answers 404 exactly as an id that does not exist", async () => {
    const answers = [];
    for (const id of [other.projectId, "prj_doesnotexist"]) {
      const response = await readGet(service.url, `/v1/traces?project=${id}`, project.read.key);
      expect(response.status).toBe(404);
      const body = (await expectConforms("GET", "/v1/traces", response)) as { message: string };
      answers.push({ ...body, message: body.message.replace(id, "ID") });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]).toEqual({ error: "Not found", message: 'no project with id "ID"' });
    // Its own id is fine.
    expect((await readGet(service.url, `/v1/metrics?project=${project.projectId}`, project.read.key)).status).toBe(200);
  });

  it("a dashboard session reads the project it names, and only its own", async () => {
    const client = new DashboardClient(service.url);
    await client.signUp("reader@example.com");
    const mine = await client.get(`/v1/metrics?project=${client.project}`);
    expect(mine.status).toBe(200);
    expect(mine.headers.get("x-ratelimit-limit")).toBeNull();
    expect(await mine.json()).toEqual({
      data: [{ group: null, calls: 0, errors: 0, cost_usd: 0, tokens_in: 0, tokens_out: 0, p50_latency_ms: 0, p95_latency_ms: 0 }],
    });
    const unnamed = await client.get("/v1/traces");
    expect(unnamed.status).toBe(400);
    expect(await unnamed.json()).toEqual({ error: "Validation error", details: "project: required" });
    const foreign = await client.get(`/v1/traces?project=${project.projectId}`);
    expect(foreign.status).toBe(404);
    const crossSite = await client.get(`/v1/traces?project=${client.project}`, { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
  });
});

describe("methods", () => {
  it("/v1/traces takes GET and POST, the other read routes GET; anything else is 405 with Allow", async () => {
    for (const [method, path, allow] of [
      ["PUT", "/v1/traces", "GET, POST"],
      ["DELETE", "/v1/traces", "GET, POST"],
      ["HEAD", "/v1/traces", "GET, POST"],
      ["POST", "/v1/metrics", "GET"],
      ["PATCH", "/v1/metrics", "GET"],
      ["POST", "/v1/errors", "GET"],
      ["DELETE", "/v1/runs", "GET"],
      ["PUT", "/v1/runs/session:session-1", "GET"],
    ] as const) {
      const response = await fetch(`${service.url}${path}`, { method, headers: { authorization: `Bearer ${project.read.key}` } });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get("allow")).toBe(allow);
      expect(response.headers.get("x-request-id")).toMatch(/\S/);
    }
  });
});

describe("bad input is a 400 naming the problem, never a 500", () => {
  const cases: Array<[string, string]> = [
    ["/v1/traces?from=yesterday", "from must be an RFC 3339 date-time"],
    ["/v1/traces?from=2026-02-30T00:00:00Z", "from must be an RFC 3339 date-time"],
    ["/v1/metrics?to=2026-01-01", "to must be an RFC 3339 date-time"],
    ["/v1/metrics?to=2026-01-01T10:00:00", "to must be an RFC 3339 date-time"],
    ["/v1/metrics?to=2026-01-01T10:00:00%2B24:00", "to must be an RFC 3339 date-time"],
    ["/v1/traces?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from must not be after to"],
    ["/v1/traces?from=2026-01-01T10:00:00%2B23:60", "from must be an RFC 3339 date-time"],
    ["/v1/metrics?group_by=country", "group_by must be one of model, provider, key, day"],
    ["/v1/metrics?group_by=metadata.", "group_by: metadata.<key>"],
    ["/v1/metrics?group_by=metadata.a%20b", "group_by: metadata.<key>"],
    ["/v1/metrics?group_by=model&group_by=day", "group_by is given more than once"],
    ["/v1/metrics?limit=0", "limit must be a whole number from 1 to 1000"],
    ["/v1/traces?limit=501", "limit must be a whole number from 1 to 500"],
    ["/v1/traces?limit=ten", "limit must be a whole number from 1 to 500"],
    ["/v1/traces?cursor=not-a-cursor", "cursor is not valid"],
    ["/v1/traces?cursor=", "cursor is not valid"],
    ["/v1/traces?modle=gpt-4o", 'unknown parameter "modle"'],
    ["/v1/traces?since=2026-01-01T00:00:00Z", 'unknown parameter "since"'],
    [`/v1/traces?user=${"u".repeat(300)}`, "user_id"],
    [`/v1/runs?q=mini&model_contains=${"m".repeat(300)}`, "model_contains"],
    [`/v1/metrics?${Array.from({ length: 21 }, (_, i) => `tag=t${i}`).join("&")}`, "tags"],
    ["/v1/metrics?meta.bad%20key=1", "metadata"],
    ["/v1/errors?limit=201", "limit must be a whole number from 1 to 200"],
    ["/v1/errors?group_by=model", 'unknown parameter "group_by"'],
    ["/v1/errors?from=2026-02-30T00:00:00Z", "from must be an RFC 3339 date-time"],
    ["/v1/runs?limit=501", "limit must be a whole number from 1 to 500"],
    ["/v1/runs?cursor=not-a-cursor", "cursor is not valid"],
    [`/v1/runs?cursor=${Buffer.from('[1.5,"session:a"]').toString("base64url")}`, "cursor is not valid"],
    [`/v1/runs?cursor=${Buffer.from('[1,"nonsense"]').toString("base64url")}`, "cursor is not valid"],
    [`/v1/runs?cursor=${"a".repeat(2049)}`, "cursor is not valid"],
    ["/v1/runs?env=production&ordr=cost", 'unknown parameter "ordr"'],
    ["/v1/runs/nonsense", "the run id must be otlp:<32 lower-case hex digits> or session:<session id>"],
    ["/v1/runs/otlp:ABC", "the run id must be"],
    ["/v1/runs/", "the run id must be"],
    ["/v1/runs/session:%E0%A4%A", "the run id must be"],
    [`/v1/runs/session:${"s".repeat(300)}`, "the run id must be"],
    ["/v1/runs/session:a?from=2026-01-01T00:00:00Z", 'unknown parameter "from"; this route takes project'],
  ];
  it.each(cases)("%s", async (path, problem) => {
    const response = await readGet(service.url, path, project.read.key);
    expect(response.status).toBe(400);
    expect(response.headers.get("x-ratelimit-limit")).toBe("100000");
    const body = (await expectConforms("GET", documented(new URL(response.url).pathname), response)) as { error: string; details: string };
    expect(body.error).toBe("Validation error");
    expect(body.details).toContain(problem);
  });
});

it("RFC 3339 times in any zone, a lower-case t and z, fractions, years 0-99 and a leap second are all read", async () => {
  for (const time of [
    "2016-12-31T23:59:60Z",
    "2024-02-29t00:00:00.5z",
    "2026-01-01T10:00:00.123456789%2B05:30",
    "0099-01-01T00:00:00-01:00",
  ]) {
    const response = await readGet(service.url, `/v1/metrics?from=${time}`, project.read.key);
    expect(response.status, time).toBe(200);
  }
  // The same instant written in two zones reads the same traces.
  const instant = Math.floor((Date.now() - 2 * day) / 1000) * 1000;
  const utc = await readGet(service.url, `/v1/metrics?from=${new Date(instant).toISOString().slice(0, 19)}Z`, project.read.key);
  const shifted = new Date(instant + 2 * 3_600_000).toISOString().slice(0, 19);
  const later = await readGet(service.url, `/v1/metrics?from=${shifted}%2B02:00`, project.read.key);
  expect(((await later.json()) as { data: unknown[] }).data[0]).toEqual(((await utc.json()) as { data: unknown[] }).data[0]);
});

describe("GET /v1/traces", () => {
  /** Every page of a query, following next_cursor. */
  async function allPages(query: string, limit: number) {
    const traces: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await readGet(
        service.url,
        `/v1/traces?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        project.read.key,
      );
      expect(response.status).toBe(200);
      const body = (await expectConforms("GET", "/v1/traces", response)) as { data: Record<string, unknown>[]; next_cursor: string | null };
      expect(body.data.length).toBeLessThanOrEqual(limit);
      traces.push(...body.data);
      cursor = body.next_cursor;
      pages++;
    } while (cursor !== null);
    return { traces, pages };
  }

  /** The JSONL download of the same query, read with the same key. */
  async function download(query: string) {
    const response = await readGet(
      service.url,
      `/app/export/traces.jsonl?${query.replace(/^&/, "").replaceAll("from=", "since=").replaceAll("to=", "until=")}`,
      project.read.key,
    );
    expect(response.status).toBe(200);
    return (await response.text())
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  it("pages through every trace of the project, newest first, each exactly as the JSONL download writes it", async () => {
    const { traces, pages } = await allPages("", 100);
    expect(traces).toHaveLength(230);
    expect(pages).toBe(3);
    expect(traces).toEqual(await download(""));
    expect(new Set(traces.map((t) => t.account_id))).toEqual(new Set([project.projectId]));
    expect(new Set(traces.map((t) => t.id)).size).toBe(230);
  });

  it("applies the range and the dashboard's filters as the download does", async () => {
    const from = new Date(Date.now() - 3.5 * day).toISOString();
    const to = new Date(Date.now() - 1.25 * day).toISOString();
    for (const query of [
      `&from=${from}&to=${to}`,
      "&provider=openai&status=error",
      `&from=${from}&tag=chat&meta.team=growth`,
      "&env=staging&user=user-3",
      "&q=MINI",
    ]) {
      const { traces } = await allPages(query, 37);
      const expected = await download(query);
      expect(traces, query).toEqual(expected);
      expect(traces.length, query).toBeGreaterThan(0);
    }
    const { traces } = await allPages(`&from=${from}&to=${to}`, 500);
    for (const t of traces) expect(Date.parse(t.received_at as string)).toBeGreaterThanOrEqual(Date.parse(from));
    for (const t of traces) expect(Date.parse(t.received_at as string)).toBeLessThan(Date.parse(to));
  });

  it("answers an empty page with a null cursor when nothing matches", async () => {
    const response = await readGet(service.url, "/v1/traces?model=no-such-model", project.read.key);
    expect(await response.json()).toEqual({ data: [], next_cursor: null });
  });
});

describe("a project's own retention", () => {
  it("narrows both routes: traces older than the project keeps are never read back", async () => {
    const kept = await projectWithKeys(service.store);
    const traces = await seedTraces(service.store, kept.projectId, kept.ingest.id, 80, 10, 3);
    await service.store.teams.updateProject(kept.projectId, { retentionDays: 4 });
    const cutoff = Date.now() - 4 * day;
    const young = traces.filter((t) => Number(t.receivedAt!.seconds) * 1000 > cutoff + 60_000);
    const oldEnough = traces.filter((t) => Number(t.receivedAt!.seconds) * 1000 < cutoff - 60_000);
    expect(young.length).toBeGreaterThan(0);
    expect(oldEnough.length).toBeGreaterThan(0);
    const page = (await readGet(service.url, "/v1/traces?limit=500", kept.read.key).then((r) => r.json())) as {
      data: { received_at: string }[];
    };
    for (const t of page.data) expect(Date.parse(t.received_at)).toBeGreaterThanOrEqual(cutoff - 60_000);
    expect(page.data.length).toBeGreaterThanOrEqual(young.length);
    expect(page.data.length).toBeLessThanOrEqual(traces.length - oldEnough.length);
    const total = (await readGet(service.url, "/v1/metrics", kept.read.key).then((r) => r.json())) as { data: { calls: number }[] };
    expect(total.data[0]!.calls).toBe(page.data.length);
  });
});

describe("the read limit", () => {
  it("counts each read key apart; past it, 429 with the spec's body, Retry-After and the rate-limit headers", async () => {
    const limited = await startTestService({ readPerMinute: 3 });
    const { read } = await projectWithKeys(limited.store);
    const { read: second } = await projectWithKeys(limited.store);
    const remaining = [];
    for (let i = 0; i < 3; i++) {
      const response = await readGet(limited.url, i % 2 ? "/v1/metrics" : "/v1/traces", read.key);
      expect(response.status).toBe(200);
      remaining.push(response.headers.get("x-ratelimit-remaining"));
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    const refused = await readGet(limited.url, "/v1/metrics", read.key);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("3");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(await expectConforms("GET", "/v1/metrics", refused)).toEqual({ error: "Rate limit exceeded", retry_after: retryAfter });
    expect((await readGet(limited.url, "/v1/traces", second.key)).status).toBe(200);
  });
});

describe("sums past the largest double", () => {
  it("a cost that adds up past it is answered as protobuf's JSON writes it, \"Infinity\", and conforms", async () => {
    const huge = await projectWithKeys(service.store);
    for (let i = 0; i < 2; i++) {
      const body = traceBody(huge.ingest.key, { cost_usd: 1e308 });
      expect((await postTrace(service.url, body, { key: huge.ingest.key })).status).toBe(202);
    }
    const res = await readGet(service.url, "/v1/metrics?group_by=model", huge.read.key);
    expect(res.status).toBe(200);
    const answer = (await expectConforms("GET", "/v1/metrics", res)) as { data: { cost_usd: unknown; calls: number }[] };
    expect(answer.data).toEqual([expect.objectContaining({ calls: 2, cost_usd: "Infinity" })]);
  });
});
