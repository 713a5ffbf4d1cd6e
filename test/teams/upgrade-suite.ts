import { execFileSync } from "node:child_process";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { create, toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { repoRoot } from "../support/cli.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { runProcess } from "../support/run-process.js";
import { tempDir } from "../support/temp-dir.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

/** The last commit of main before teams: the release whose databases must upgrade without loss. */
const lastRelease = "3b8cdcf";

/** What the old release wrote for one account, and what its reader answered (fixtures/old-release-writer.ts). */
interface OldAccount {
  id: string;
  email?: string;
  keys: string[];
  sessionToken?: string;
  traces: unknown[];
  totals: unknown;
  byModel: unknown;
  byDay: unknown;
  byUser: unknown;
  byTag: unknown;
  byFeature: unknown;
}

/** The old release's source, runnable: its src, gen and the SDK's price table, with this checkout's node_modules. */
function oldRelease(): string {
  const dir = tempDir("calltrace-old-");
  execFileSync("sh", ["-c", `git archive ${lastRelease} src gen package.json sdk/typescript/src sdk/pricing | tar -x -C "${dir}"`], {
    cwd: repoRoot,
  });
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"));
  return dir;
}

async function writeWithOldRelease(dir: string, target: { dataDir: string; mongodbUri: string | undefined }): Promise<OldAccount[]> {
  const writer = join(repoRoot, "test/teams/fixtures/old-release-writer.ts");
  const run = await runProcess(process.execPath, ["--import", "tsx", writer, JSON.stringify(target)], { cwd: dir, timeoutMs: 180_000 });
  if (run.status !== 0) throw new Error(`the old release's writer failed:\n${run.output}`);
  return JSON.parse(run.stdout) as OldAccount[];
}

/**
 * `value` with only the keys that `old` (the same reading by the old release) has, at every depth:
 * fields added since (a group's `other`, a page's `whole_days`) are not the old release's to compare.
 * A key the old release had and the new one lost still fails, as does a different count of rows.
 */
function knownTo(value: unknown, old: unknown): unknown {
  if (Array.isArray(value) && Array.isArray(old)) return value.map((v, i) => (i < old.length ? knownTo(v, old[i]) : v));
  if (value && old && typeof value === "object" && typeof old === "object" && !Array.isArray(old)) {
    return Object.fromEntries(
      Object.keys(old).map((k) => [k, knownTo((value as Record<string, unknown>)[k], (old as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** The same readings as the writer took, through the current code. */
async function readings(store: Store, id: string) {
  const filter = create(TraceFilterSchema, {});
  const page = await store.listTraces(id, filter, { pageSize: 1000 });
  const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v))) as unknown;
  return plain({
    traces: page.traces.map((t) => toJson(StoredTraceSchema, t)),
    totals: await store.usageTotals(id, filter),
    byModel: await store.usageByModel(id, filter),
    byDay: await store.usageByDay(id, filter),
    byUser: await store.usageByGroup(id, filter, { kind: "user" }, 10),
    byTag: await store.usageByGroup(id, filter, { kind: "tag" }, 10),
    byFeature: await store.usageByGroup(id, filter, { kind: "metadata", key: "feature" }, 10),
  });
}

/**
 * Item 7 of the teams issue: a database written by the last release before teams (embedded, or
 * MongoDB: FerretDB, or MONGODB_URI's server) opened by the current code keeps every account as an
 * organization with one project (same id), its user as owner, every key, trace, roll-up and session.
 * upgrade.test.ts runs it on the embedded store, upgrade-mongo.test.ts (the store tier) on MongoDB.
 */
export function upgradeSuite(mongo: boolean): void {
  let mongoServer: MongoTestServer | undefined;
  let old: OldAccount[];
  let service: TestService;
  let store: Store;

  beforeAll(async () => {
    const dataDir = tempDir();
    let target: { dataDir: string; mongodbUri: string | undefined } = { dataDir, mongodbUri: undefined };
    if (mongo) {
      mongoServer = await startMongoTestServer();
      target = { dataDir, mongodbUri: mongoServer.freshUri() };
    }
    old = await writeWithOldRelease(oldRelease(), target);
    // The current release opens it: the upgrade runs here.
    service = await startTestService(target);
    store = await openStore(target);
  }, 300_000);
  afterAll(async () => {
    await store?.close();
    await mongoServer?.close();
  });

  it("wrote three accounts with keys, traces and sessions (the premise)", () => {
    expect(old.map((a) => [a.email ?? "(cli)", a.keys.length, a.traces.length])).toEqual([
      ["alice@example.com", 2, 12],
      ["bob@example.com", 1, 7],
      ["(cli)", 1, 8],
    ]);
  });

  it("keeps every trace and roll-up of every account, under a project of the same id", async () => {
    for (const account of old) {
      const { id, email, keys, sessionToken, ...figures } = account;
      expect(knownTo(await readings(store, id), figures), id).toEqual(figures);
      const project = await store.teams.getProject(id);
      expect(project, id).toBeDefined();
      expect(await store.teams.getOrganization(project!.organizationId), id).toBeDefined();
      expect((await store.teams.listProjects(project!.organizationId)).map((p) => p.id)).toEqual([id]);
    }
  });

  it("makes each signed-up account's user the owner of its organization, able to log in and see the same figures", async () => {
    for (const account of old.filter((a) => a.email)) {
      const client = new DashboardClient(service.url);
      const session = (await client.ok("AuthService/LogIn", { email: account.email, password: "correct horse battery" })).session as Json;
      expect(session.accountId).toBe(account.id);
      const organizations = (await client.ok("TeamService/ListOrganizations")).organizations as Json[];
      expect(organizations).toHaveLength(1);
      expect(organizations[0]).toMatchObject({ role: "ROLE_OWNER" });
      expect((organizations[0]!.projects as Json[]).map((p) => p.id)).toEqual([account.id]);
      const listed = await client.ok("QueryService/ListTraces", { pageSize: 100 });
      expect((listed.page.traces as Json[]).map((t) => t.id)).toEqual(account.traces.map((t) => (t as Json).id));
    }
  });

  it("keeps the sessions: a browser signed in before the upgrade still is", async () => {
    for (const account of old.filter((a) => a.sessionToken)) {
      const res = await fetch(`${service.url}/calltrace.v1.AuthService/GetSession`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `ct_session=${account.sessionToken}` },
        body: "{}",
      });
      expect(((await res.json()) as Json).session).toMatchObject({ email: account.email, accountId: account.id });
    }
  });

  it("keeps every key: each still sends traces into its account's project", async () => {
    for (const account of old) {
      for (const key of account.keys) expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
      const page = await store.listTraces(account.id, create(TraceFilterSchema, {}), { pageSize: 1000 });
      expect(page.traces).toHaveLength(account.traces.length + account.keys.length);
    }
  });
}
