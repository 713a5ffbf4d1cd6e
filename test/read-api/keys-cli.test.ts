import { beforeAll, describe, expect, it } from "vitest";
import { runCli, runCliRaw } from "../support/cli.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { readGet } from "./read-support.js";

// `calltrace keys create --scope read`, run as a user runs it against the running server's store:
// the key it prints reads, over the read API, the traces an ingest key made the same way sends.
let service: TestService;
let dataDir: string;

beforeAll(async () => {
  // A CLI run takes seconds on a busy machine: past the 5 s keep-alive default, fetch could reuse a
  // connection the server is closing that instant (ECONNRESET), which no user of this test sees.
  service = await startTestService({ keepAliveTimeoutMs: 120_000 });
  dataDir = service.config.dataDir;
});

const cli = (...args: string[]) => runCli([...args, "--data-dir", dataDir]);

async function tracesOf(key: string): Promise<Array<Record<string, unknown>>> {
  const response = await readGet(service.url, "/v1/traces", key);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Array<Record<string, unknown>> }).data;
}

describe("calltrace keys create --scope read", () => {
  it("prints a read key that sees the traces of an ingest key made the same way (the plan's default project)", async () => {
    const read = cli("keys", "create", "--plan", "pro", "--scope", "read");
    expect(read).toMatch(/^ct_[0-9A-Za-z]{32,}\n$/);
    const readKey = read.trim();
    const ingestKey = cli("keys", "create", "--plan", "pro").trim();
    expect(
      (await postTrace(service.url, traceBody(ingestKey, { model: "gpt-4o-mini", user_id: "cli-user" }), { key: ingestKey })).status,
    ).toBe(202);

    const traces = await tracesOf(readKey);
    expect(traces).toEqual([expect.objectContaining({ model: "gpt-4o-mini", user_id: "cli-user" })]);
    const listed = JSON.parse(cli("keys", "list", "--json")) as Array<{ prefix: string; scope: string; project: string }>;
    const [readRecord, ingestRecord] = [readKey, ingestKey].map((k) => listed.find((r) => k.startsWith(`ct_${r.prefix}`))!);
    expect(readRecord!.scope).toBe("read");
    expect(ingestRecord!.scope).toBe("ingest");
    expect(readRecord!.project).toBe(ingestRecord!.project);
    expect(traces[0]!.account_id).toBe(readRecord!.project);

    // The read key cannot send; the ingest key cannot read.
    const refused = await postTrace(service.url, traceBody(readKey), { key: readKey });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: "Unauthorized", message: "Invalid API key" });
    expect((await readGet(service.url, "/v1/metrics", ingestKey)).status).toBe(403);
  });

  it("--project ID puts the key in that project, and it reads that project alone", async () => {
    const { project } = await service.store.teams.createOrganization({ name: "cli org", project: { name: "staging", plan: "pro" } });
    const created = JSON.parse(cli("keys", "create", "--project", project.id, "--scope", "read", "--name", "grafana", "--json")) as Record<
      string,
      string
    >;
    expect(created).toMatchObject({ project: project.id, scope: "read", name: "grafana", plan: "pro" });
    const ingestKey = cli("keys", "create", "--project", project.id).trim();
    expect(
      (await postTrace(service.url, traceBody(ingestKey, { model: "claude-sonnet-4-5", provider: "anthropic" }), { key: ingestKey }))
        .status,
    ).toBe(202);

    const traces = await tracesOf(created.key!);
    expect(traces).toEqual([expect.objectContaining({ model: "claude-sonnet-4-5", account_id: project.id })]);
    const metrics = await readGet(service.url, "/v1/metrics?group_by=provider", created.key);
    expect(((await metrics.json()) as { data: Array<{ group: string; calls: number }> }).data).toEqual([
      expect.objectContaining({ group: "anthropic", calls: 1 }),
    ]);
  });

  it("refuses an unknown scope or project, saying which", () => {
    const scope = runCliRaw(["keys", "create", "--plan", "pro", "--scope", "admin", "--data-dir", dataDir]);
    expect(scope.status).toBe(2);
    expect(scope.stderr).toContain("unknown scope admin; one of ingest, read");
    const project = runCliRaw(["keys", "create", "--project", "prj_nope", "--scope", "read", "--data-dir", dataDir]);
    expect(project.status).toBe(2);
    expect(project.stderr).toContain("no project prj_nope");
  });
});
