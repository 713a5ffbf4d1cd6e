import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Dimension, TraceFilterSchema, type TraceFilter, type UsageTotals } from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { expectedTotals } from "../support/expected-usage.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { describeErrorsAndRuns } from "./errors-runs-match.js";
import { day, projectWithKeys, readGet, seedTraces } from "./read-support.js";

// A read key's figures from GET /v1/metrics and GET /v1/traces against the dashboard's own
// QueryService answers for the same project and range, read with the generated client over
// Connect, gRPC and gRPC-Web (the read key authenticating each), and with a viewer's session; and
// GET /v1/errors and /v1/runs against GetErrorGroups and ListRuns (errors-runs-match.ts).
// Run on the embedded store by dashboard-match.test.ts, on MongoDB by dashboard-match-mongo.test.ts.

// Mid-day bounds: the roll-ups answer whole days, the traces the partial days at either end.
const from = Date.now() - 11.3 * day;
const to = Date.now() - 1.6 * day;
const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;

export const transports: ReadonlyArray<readonly [string, (baseUrl: string) => Transport]> = [
  ["Connect", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
  ["gRPC", (baseUrl) => createGrpcTransport({ baseUrl })],
  ["gRPC-Web", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
];

/** A REST metrics row as QueryService's UsageTotals reads. */
function asRow(group: string | null, totals: UsageTotals | undefined) {
  return {
    group,
    calls: Number(totals!.calls),
    errors: Number(totals!.errors),
    cost_usd: totals!.costUsd,
    tokens_in: Number(totals!.tokensIn),
    tokens_out: Number(totals!.tokensOut),
    p50_latency_ms: totals!.latencyP50Ms,
    p95_latency_ms: totals!.latencyP95Ms,
  };
}

const dimensions: Array<[string, Dimension, string]> = [
  ["model", Dimension.MODEL, ""],
  ["provider", Dimension.PROVIDER, ""],
  ["key", Dimension.KEY, ""],
  ["user", Dimension.USER, ""],
  ["session", Dimension.SESSION, ""],
  ["tag", Dimension.TAG, ""],
  ["environment", Dimension.ENVIRONMENT, ""],
  ["service", Dimension.SERVICE, ""],
  ["metadata.team", Dimension.METADATA, "team"],
];

/**
 * The match on one store, read with the given protocols; `seeded` counts the traces of the project's
 * two keys and of another project. The protocols' authentication is no store's business, so a slow
 * store (MongoDB on FerretDB) may be read over Connect alone, with fewer traces.
 */
export function describeDashboardMatch(
  storeName: "embedded" | "mongodb",
  protocols: ReadonlyArray<readonly [string, (baseUrl: string) => Transport]>,
  seeded: readonly [number, number, number],
): void {
  describe(`on the ${storeName} store`, () => {
    let service: TestService;
    let store: Store;
    let mongo: MongoTestServer | undefined;
    let project: Awaited<ReturnType<typeof projectWithKeys>>;
    let other: Awaited<ReturnType<typeof projectWithKeys>>;
    let traces: StoredTrace[];

    beforeAll(async () => {
      if (storeName === "mongodb") {
        mongo = await startMongoTestServer();
        service = await startTestService({ readPerMinute: 100_000, mongodbUri: mongo.freshUri() });
        // The service's own database, opened as the CLI would.
        store = await openStore(service.config);
      } else {
        service = await startTestService({ readPerMinute: 100_000 });
        store = service.store;
      }
      project = await projectWithKeys(store);
      other = await projectWithKeys(store);
      traces = await seedTraces(store, project.projectId, project.ingest.id, seeded[0], 14, 11);
      // A second key of the project, and another project's traces that must never count.
      traces.push(...(await seedTraces(store, project.projectId, project.read.id, seeded[1], 14, 12)));
      await seedTraces(store, other.projectId, other.ingest.id, seeded[2], 14, 13);
    }, 120_000);
    afterAll(async () => {
      if (store !== service?.store) await store?.close();
      await mongo?.close();
    });

    async function metrics(query: string): Promise<{ data: ReturnType<typeof asRow>[]; total_groups?: number }> {
      const response = await readGet(service.url, `/v1/metrics?${query}`, project.read.key);
      expect(response.status, query).toBe(200);
      return (await response.json()) as { data: ReturnType<typeof asRow>[]; total_groups?: number };
    }

    describe.each(protocols)("GET /v1/metrics equals QueryService over %s with the same read key", (_name, transport) => {
      const call = { headers: { authorization: "" } };
      let client: ReturnType<typeof createClient<typeof QueryService>>;
      let filter: TraceFilter;
      beforeAll(() => {
        client = createClient(QueryService, transport(service.url));
        call.headers.authorization = `Bearer ${project.read.key}`;
        filter = create(TraceFilterSchema, { since: timestampFromMs(from), until: timestampFromMs(to) });
      });

      it("the total row", async () => {
        const { totals } = await client.getUsageTotals({ filter }, call);
        expect((await metrics(range)).data).toEqual([asRow(null, totals)]);
      });

      it("per day", async () => {
        const { days } = await client.getUsageByDayTotals({ filter }, call);
        expect(days.length).toBeGreaterThanOrEqual(10);
        expect((await metrics(`${range}&group_by=day`)).data).toEqual(days.map((d) => asRow(d.day, d.totals)));
      });

      it.each(dimensions)("per %s", async (groupBy, dimension, metadataKey) => {
        const { groups, totalGroups } = await client.getUsageByGroup({ filter, dimension, metadataKey, limit: 1000 }, call);
        expect(groups.length).toBeGreaterThan(1);
        const answer = await metrics(`${range}&group_by=${groupBy}`);
        expect(answer.data).toEqual(groups.map((g) => asRow(g.value, g.totals)));
        expect(answer.total_groups).toBe(Number(totalGroups));
      });

      it("with the dashboard's filters, and a limit on the groups", async () => {
        const narrowed = create(TraceFilterSchema, { ...filter, provider: "openai", tags: ["chat"], metadata: { team: "growth" } });
        const { totals } = await client.getUsageTotals({ filter: narrowed }, call);
        expect(Number(totals!.calls)).toBeGreaterThan(0);
        expect((await metrics(`${range}&provider=openai&tag=chat&meta.team=growth`)).data).toEqual([asRow(null, totals)]);
        const { groups, totalGroups } = await client.getUsageByGroup({ filter, dimension: Dimension.USER, limit: 3 }, call);
        const answer = await metrics(`${range}&group_by=user&limit=3`);
        expect(answer.data).toEqual(groups.map((g) => asRow(g.value, g.totals)));
        expect(answer.total_groups).toBe(Number(totalGroups));
        expect(answer.total_groups).toBeGreaterThan(3);
      });

      it("the read key reaches only its own project, an ingest key is refused naming its scope, an unknown key is unauthenticated", async () => {
        const refusal = async (projectId: string, key: string) =>
          client.getUsageTotals({ filter, projectId }, { headers: { authorization: `Bearer ${key}` } }).then(
            () => undefined,
            (error: unknown) => ConnectError.from(error),
          );
        expect((await refusal(other.projectId, project.read.key))?.code).toBe(Code.NotFound);
        const ingest = await refusal("", project.ingest.key);
        expect(ingest?.code).toBe(Code.PermissionDenied);
        expect(ingest?.rawMessage).toContain("scope is ingest");
        expect((await refusal("", "ct_unknownunknownunknownunknownunknown00"))?.code).toBe(Code.Unauthenticated);
      });
    });

    describe("the figures are the traces' own", () => {
      const inRange = () =>
        traces.filter(
          (t) =>
            Number(t.receivedAt!.seconds) * 1000 + t.receivedAt!.nanos / 1e6 >= from &&
            Number(t.receivedAt!.seconds) * 1000 + t.receivedAt!.nanos / 1e6 < to,
        );

      it("the total row is the sums and percentiles of the traces in the range, worked out the slow way", async () => {
        const expected = expectedTotals(inRange());
        const [row] = (await metrics(range)).data;
        expect(row).toEqual({
          group: null,
          calls: Number(expected.calls),
          errors: Number(expected.errors),
          cost_usd: expect.closeTo(expected.costUsd, 9),
          tokens_in: Number(expected.tokensIn),
          tokens_out: Number(expected.tokensOut),
          p50_latency_ms: expected.latencyP50Ms,
          p95_latency_ms: expected.latencyP95Ms,
        });
      });

      it("GET /v1/traces over the range holds exactly the calls, errors, tokens and cost GET /v1/metrics sums", async () => {
        const listed: Array<Record<string, unknown>> = [];
        let cursor: string | null = null;
        do {
          const response = await readGet(
            service.url,
            `/v1/traces?${range}&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
            project.read.key,
          );
          const body = (await response.json()) as { data: Array<Record<string, unknown>>; next_cursor: string | null };
          listed.push(...body.data);
          cursor = body.next_cursor;
        } while (cursor);
        const [row] = (await metrics(range)).data;
        expect(listed.length).toBe(row!.calls);
        expect(listed.length).toBe(inRange().length);
        expect(listed.filter((t) => t.status === "error").length).toBe(row!.errors);
        expect(listed.reduce((s, t) => s + (t.tokens_in as number), 0)).toBe(row!.tokens_in);
        expect(listed.reduce((s, t) => s + (t.tokens_out as number), 0)).toBe(row!.tokens_out);
        expect(listed.reduce((s, t) => s + (t.cost_usd as number), 0)).toBeCloseTo(row!.cost_usd, 9);
      });

      it("a viewer's dashboard session reads the same figures from QueryService as the read key from REST", async () => {
        const viewer = new DashboardClient(service.url);
        await viewer.signUp("viewer@example.com");
        const user = await store.users.findUserByEmail("viewer@example.com");
        const { organizationId } = (await store.teams.getProject(project.projectId))!;
        await store.teams.addMember(organizationId, user!.id, "viewer");
        const filter = { since: new Date(from).toISOString(), until: new Date(to).toISOString() };
        const totals = (await viewer.ok("QueryService/GetUsageTotals", { projectId: project.projectId, filter })).totals;
        const [row] = (await metrics(range)).data;
        expect(row).toEqual({
          group: null,
          calls: Number(totals.calls),
          errors: Number(totals.errors ?? 0),
          cost_usd: totals.costUsd,
          tokens_in: Number(totals.tokensIn),
          tokens_out: Number(totals.tokensOut),
          p50_latency_ms: totals.latencyP50Ms,
          p95_latency_ms: totals.latencyP95Ms,
        });
        // The session reads the REST routes too, naming the project.
        const viaSession = await viewer.get(`/v1/metrics?${range}&project=${project.projectId}`);
        expect(((await viaSession.json()) as { data: unknown[] }).data).toEqual([row]);
      });
    });

    describeErrorsAndRuns(
      () => ({ url: service.url, store, project, other, traces, from, to }),
      storeName === "mongodb" ? 240_000 : 30_000,
    );
  });
}
