import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { type ErrorGroup, type RunSummary, TraceFilterSchema, type ValueCount } from "../../gen/calltrace/v1/query_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { openApiDocument } from "../../src/openapi/openapi-document.js";
import type { Store } from "../../src/store/store.js";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { conformanceChecker } from "../openapi/conformance.js";
import { call as storedCall } from "../support/stored-call.js";
import { projectWithKeys, readGet } from "./read-support.js";

const expectConforms = conformanceChecker(openApiDocument() as Parameters<typeof conformanceChecker>[0]);

/** What the match reads: a running service, its store, the seeded project, another project, and the range. */
export interface ErrorsRunsContext {
  url: string;
  store: Store;
  project: Awaited<ReturnType<typeof projectWithKeys>>;
  other: Awaited<ReturnType<typeof projectWithKeys>>;
  /** The traces seeded into `project`. */
  traces: StoredTrace[];
  from: number;
  to: number;
}

/** A time as protobuf's JSON writes it: no fraction on a whole second. */
const iso = (t: Timestamp | undefined) => timestampDate(t!).toISOString().replace(/\.000Z$/, "Z");
const counts = (values: ValueCount[]) => values.map((v) => ({ value: v.value, calls: Number(v.calls) }));

/** An error group as the read API should write it, worked out here from QueryService's answer. */
function asErrorGroup(g: ErrorGroup) {
  return {
    id: g.id,
    message: g.message,
    calls: Number(g.calls),
    share: g.share,
    first_seen: iso(g.firstSeen),
    last_seen: iso(g.lastSeen),
    models: counts(g.models),
    model_count: Number(g.modelCount),
    keys: counts(g.keys),
    key_count: Number(g.keyCount),
    users: counts(g.users),
    user_count: Number(g.userCount),
    cost_usd: g.costUsd,
  };
}

function asRun(r: RunSummary | undefined) {
  return {
    id: r!.id,
    calls: Number(r!.calls),
    errors: Number(r!.errors),
    cost_usd: r!.costUsd,
    tokens_in: Number(r!.tokensIn),
    tokens_out: Number(r!.tokensOut),
    start: iso(r!.start),
    end: iso(r!.end),
  };
}

type RunJson = ReturnType<typeof asRun>;

/**
 * GET /v1/errors, /v1/runs and /v1/runs/{id} against QueryService's GetErrorGroups, ListRuns and
 * GetRun for the same project and range, read with the same read key over Connect, then with a
 * viewer's session; and that another project's run is 404. Called inside describeDashboardMatch,
 * so it runs on both stores over the traces seeded there; `timeout` per test, for a slow store
 * (FerretDB sums a run's figures in seven queries).
 */
export function describeErrorsAndRuns(context: () => ErrorsRunsContext, timeout: number): void {
  describe("GET /v1/errors and /v1/runs equal QueryService with the same read key", { timeout }, () => {
    const call = { headers: { authorization: "" } };
    let c: ErrorsRunsContext;
    let client: ReturnType<typeof createClient<typeof QueryService>>;
    let range: string;
    const filter = (init: Parameters<typeof create<typeof TraceFilterSchema>>[1] = {}) =>
      create(TraceFilterSchema, { since: timestampFromMs(c.from), until: timestampFromMs(c.to), ...init });

    beforeAll(() => {
      c = context();
      client = createClient(QueryService, createConnectTransport({ baseUrl: c.url, httpVersion: "1.1" }));
      call.headers.authorization = `Bearer ${c.project.read.key}`;
      range = `from=${new Date(c.from).toISOString()}&to=${new Date(c.to).toISOString()}`;
    });

    async function read(path: string, documented = new URL(path, "http://x").pathname, key = c.project.read.key) {
      const response = await readGet(c.url, path, key);
      expect(response.status, path).toBe(200);
      return expectConforms("GET", documented, response) as Promise<Record<string, unknown>>;
    }

    /** Every page of GET /v1/runs with `query`, following next_cursor. */
    async function allRuns(query: string, limit: number) {
      const runs: RunJson[] = [];
      let cursor: string | null = null;
      do {
        const page = (await read(`/v1/runs?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)) as {
          data: RunJson[];
          next_cursor: string | null;
        };
        expect(page.data.length).toBeLessThanOrEqual(limit);
        runs.push(...page.data);
        cursor = page.next_cursor;
      } while (cursor !== null);
      return runs;
    }

    it("error groups: the RPC's groups, shares, first and last seen and the values affected, with its totals", async () => {
      for (const [query, narrowed] of [
        ["", filter()],
        ["&provider=openai", filter({ provider: "openai" })],
      ] as const) {
        const rpc = await client.getErrorGroups({ filter: narrowed, limit: 200 }, call);
        expect(rpc.groups.length, query).toBeGreaterThan(1);
        expect(await read(`/v1/errors?${range}${query}&limit=200`)).toEqual({
          data: rpc.groups.map(asErrorGroup),
          total_errors: Number(rpc.totalErrors),
          total_groups: Number(rpc.totalGroups),
        });
      }
      const inRange = c.traces.filter((t) => {
        const at = timestampDate(t.receivedAt!).getTime();
        return at >= c.from && at < c.to;
      });
      const top = (await read(`/v1/errors?${range}&limit=1`)) as { data: unknown[]; total_errors: number; total_groups: number };
      expect(top.data).toHaveLength(1);
      expect(top.total_errors).toBe(inRange.filter((t) => t.status === "error").length);
      expect(top.total_groups).toBe(new Set(inRange.filter((t) => t.status === "error").map((t) => t.error)).size);
    });

    // From the end of the range up to now: fewer runs, as FerretDB sums each in seven queries.
    // Ranges that end before now page alike (test/store/errors-runs-contract.test.ts).
    it("runs: every page, followed by its cursor, is the RPC's list in order, filtered or not", async () => {
      const recent = { since: timestampFromMs(c.to), until: undefined };
      for (const [query, narrowed] of [
        ["", filter(recent)],
        ["&model=gpt-4o-mini", filter({ ...recent, model: "gpt-4o-mini" })],
      ] as const) {
        const { runs } = await client.listRuns({ filter: narrowed, limit: 500 }, call);
        expect(runs.length, query).toBeGreaterThan(3);
        expect(await allRuns(`from=${new Date(c.to).toISOString()}${query}`, 3), query).toEqual(runs.map(asRun));
      }
    });

    it("one run: the RPC's summary and its calls by start, each as GET /v1/traces writes it", async () => {
      const { runs } = await client.listRuns({ filter: filter(), limit: 1 }, call);
      const id = runs[0]!.id;
      const rpc = await client.getRun({ id }, call);
      const body = (await read(`/v1/runs/${encodeURIComponent(id)}`, "/v1/runs/{id}")) as {
        run: RunJson;
        calls: Array<Record<string, unknown>>;
        truncated: boolean;
      };
      expect(body.run).toEqual(asRun(rpc.run));
      expect(body.truncated).toBe(false);
      expect(body.calls.map((t) => t.id)).toEqual(rpc.calls.map((t) => t.id));
      const session = id.slice("session:".length);
      expect(body.calls).toHaveLength(c.traces.filter((t) => t.sessionId === session).length);
      const listed = (await read(`/v1/traces?session=${encodeURIComponent(session)}&limit=500`)) as {
        data: Array<Record<string, unknown>>;
      };
      const byId = new Map(listed.data.map((t) => [t.id, t]));
      for (const t of body.calls) expect(t).toEqual(byId.get(t.id));
      // The colon may also be sent as it is.
      expect(await read(`/v1/runs/${id}`, "/v1/runs/{id}")).toEqual(body);
    });

    it("another project's run is 404 exactly as a run that never was, and its own key reads it", async () => {
      const elsewhere = storedCall({
        accountId: c.other.projectId,
        keyId: c.other.ingest.id,
        at: Date.now() - 60_000,
        sessionId: "elsewhere",
      });
      await c.store.writeBatch([{ trace: elsewhere, idempotencyKey: undefined }]);
      const own = (await read("/v1/runs/session:elsewhere", "/v1/runs/{id}", c.other.read.key)) as { run: RunJson };
      expect(own.run.calls).toBe(1);
      const answers = [];
      for (const id of ["session:elsewhere", "session:never-was"]) {
        const response = await readGet(c.url, `/v1/runs/${id}`, c.project.read.key);
        expect(response.status, id).toBe(404);
        const body = (await expectConforms("GET", "/v1/runs/{id}", response)) as { message: string };
        answers.push({ ...body, message: body.message.replace(id, "ID") });
      }
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]).toEqual({ error: "Not found", message: 'no run with id "ID"' });
    });

    it("a project's own retention: GetTrace, GetRun and /v1/runs/{id} never return a call older than it keeps", async () => {
      const kept = await projectWithKeys(c.store);
      const at = (days: number) => Date.now() - days * 86_400_000;
      const write = (days: number, sessionId: string) => storedCall({ accountId: kept.projectId, keyId: kept.ingest.id, at: at(days), sessionId });
      const calls = [write(10, "straddles"), write(1, "straddles"), write(10, "all-old")];
      await c.store.writeBatch(calls.map((trace) => ({ trace, idempotencyKey: undefined })));
      await c.store.teams.updateProject(kept.projectId, { retentionDays: 5 });
      const keyed = { headers: { authorization: `Bearer ${kept.read.key}` } };
      const { traces } = (await client.listTraces({ pageSize: 10 }, keyed)).page!;
      expect(traces).toHaveLength(1);
      const young = traces[0]!;
      expect((await client.getTrace({ id: young.id }, keyed)).trace?.id).toBe(young.id);
      const old = await c.store.listTraces(kept.projectId, create(TraceFilterSchema), { pageSize: 10 });
      const oldIds = old.traces.map((t) => t.id).filter((id) => id !== young.id);
      expect(oldIds).toHaveLength(2);
      for (const id of oldIds) {
        await expect(client.getTrace({ id }, keyed), id).rejects.toMatchObject({ code: Code.NotFound });
      }
      const rpc = await client.getRun({ id: "session:straddles" }, keyed);
      expect(rpc.calls.map((t) => t.id)).toEqual([young.id]);
      expect(Number(rpc.run!.calls)).toBe(1);
      expect(timestampDate(rpc.run!.start!).getTime()).toBeGreaterThan(at(5));
      const rest = (await read("/v1/runs/session:straddles", "/v1/runs/{id}", kept.read.key)) as { run: RunJson; calls: { id: string }[] };
      expect(rest.run).toEqual(asRun(rpc.run));
      expect(rest.calls.map((t) => t.id)).toEqual([young.id]);
      await expect(client.getRun({ id: "session:all-old" }, keyed)).rejects.toMatchObject({ code: Code.NotFound });
      expect((await readGet(c.url, "/v1/runs/session:all-old", kept.read.key)).status).toBe(404);
    });

    it("a viewer's session reads what the read key reads, from REST and from QueryService", async () => {
      const viewer = new DashboardClient(c.url);
      await viewer.signUp("runs-viewer@example.com");
      const user = await c.store.users.findUserByEmail("runs-viewer@example.com");
      const { organizationId } = (await c.store.teams.getProject(c.project.projectId))!;
      await c.store.teams.addMember(organizationId, user!.id, "viewer");
      const { runs } = await client.listRuns({ filter: filter(), limit: 1 }, call);
      for (const path of [`/v1/errors?${range}`, `/v1/runs?${range}&limit=5`, `/v1/runs/${encodeURIComponent(runs[0]!.id)}?`]) {
        const viaKey = await read(path.replace(/\?$/, ""), path.startsWith("/v1/runs/") ? "/v1/runs/{id}" : undefined);
        const viaSession = await viewer.get(`${path}${path.endsWith("?") ? "" : "&"}project=${c.project.projectId}`);
        expect(viaSession.status, path).toBe(200);
        expect(viaSession.headers.get("x-ratelimit-limit")).toBeNull();
        expect(await viaSession.json(), path).toEqual(viaKey);
      }
      const filterJson = { since: new Date(c.from).toISOString(), until: new Date(c.to).toISOString() };
      const groups = await viewer.ok("QueryService/GetErrorGroups", { projectId: c.project.projectId, filter: filterJson });
      const viaKey = (await read(`/v1/errors?${range}`)) as { data: Array<{ id: string; calls: number }> };
      expect(groups.groups.map((g: { id: string; calls: string }) => ({ id: g.id, calls: Number(g.calls) }))).toEqual(
        viaKey.data.map((g) => ({ id: g.id, calls: g.calls })),
      );
      // Someone who is no member of the project's organization reads none of it.
      const stranger = new DashboardClient(c.url);
      await stranger.signUp("runs-stranger@example.com");
      expect((await stranger.get(`/v1/runs/${encodeURIComponent(runs[0]!.id)}?project=${c.project.projectId}`)).status).toBe(404);
    });

    it("an ingest key is 403 naming its scope, an unknown key the spec's 401", async () => {
      for (const path of ["/v1/errors", "/v1/runs", "/v1/runs/session:session-1"]) {
        const documented = path.startsWith("/v1/runs/") ? "/v1/runs/{id}" : path;
        const ingest = await readGet(c.url, path, c.project.ingest.key);
        expect(ingest.status, path).toBe(403);
        expect(((await expectConforms("GET", documented, ingest)) as { message: string }).message).toContain("scope is ingest");
        const unknown = await readGet(c.url, path, "ct_unknownunknownunknownunknownunknown00");
        expect(unknown.status, path).toBe(401);
        expect(await expectConforms("GET", documented, unknown)).toEqual({ error: "Unauthorized", message: "Invalid API key" });
      }
    });
  });
}
