import { describe, expect, it } from "vitest";
import { runCli, runCliRaw, sourceBin, startServiceProcess } from "../support/cli.js";
import { postTrace, traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

describe("calltrace keys", () => {
  it("create prints the plaintext key alone; --json prints id, key, prefix, plan, name, created", () => {
    const dataDir = tempDir();
    const plain = runCli(["keys", "create", "--plan", "free", "--data-dir", dataDir]);
    expect(plain).toMatch(/^ct_[0-9A-Za-z]{40}\n$/);
    const json = JSON.parse(runCli(["keys", "create", "--plan", "pro", "--name", "billing job", "--json", "--data-dir", dataDir])) as Record<string, string>;
    expect(json).toMatchObject({ plan: "pro", name: "billing job" });
    expect(json.key).toMatch(/^ct_[0-9A-Za-z]{40}$/);
    expect(json.prefix).toBe(json.key!.slice(3, 11));
    expect(json.id).toMatch(/^key_/);
    expect(new Date(json.created!).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it("list never shows a key or its hash; revoke takes an id or a unique prefix", () => {
    const dataDir = tempDir();
    const a = JSON.parse(runCli(["keys", "create", "--plan", "free", "--name", "a", "--json", "--data-dir", dataDir])) as Record<string, string>;
    const b = JSON.parse(runCli(["keys", "create", "--plan", "pro", "--name", "b", "--json", "--data-dir", dataDir])) as Record<string, string>;
    const listed = runCli(["keys", "list", "--json", "--data-dir", dataDir]);
    expect(listed).not.toContain(a.key);
    expect(listed).not.toMatch(/[0-9a-f]{64}/);
    const keys = JSON.parse(listed) as { id: string; status: string; prefix: string }[];
    expect(keys.map((k) => [k.id, k.status])).toEqual([
      [a.id, "active"],
      [b.id, "active"],
    ]);
    expect(runCli(["keys", "revoke", b.prefix!, "--data-dir", dataDir])).toContain(`revoked ${b.id}`);
    expect(runCli(["keys", "revoke", a.id!, "--data-dir", dataDir])).toContain(`revoked ${a.id}`);
    const after = JSON.parse(runCli(["keys", "list", "--json", "--data-dir", dataDir])) as { status: string }[];
    expect(after.map((k) => k.status)).toEqual(["revoked", "revoked"]);
    const table = runCli(["keys", "list", "--data-dir", dataDir]);
    expect(table).toContain(`ct_${a.prefix}…`);
  });

  it("mistakes exit 2 with a clear message", () => {
    const dataDir = tempDir();
    const noPlan = runCliRaw(["keys", "create", "--data-dir", dataDir]);
    expect(noPlan.status).toBe(2);
    expect(noPlan.stderr).toContain("keys create needs --plan");
    const badPlan = runCliRaw(["keys", "create", "--plan", "gold", "--data-dir", dataDir]);
    expect(badPlan.status).toBe(2);
    expect(badPlan.stderr).toContain("unknown plan gold");
    const noKey = runCliRaw(["keys", "revoke", "key_nothing", "--data-dir", dataDir]);
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toContain("no key has the id or unique prefix");
  });
});

describe("calltrace against a running server", () => {
  // The server and the first command run from the source checkout, as `npm start` does (bin/calltrace.js through tsx);
  // every other test runs the build compiled once per run (test/support/service-build.ts).
  it("a key created and revoked by the CLI is accepted, then rejected by the running server; export writes what it stored", async () => {
    const dataDir = tempDir();
    const server = await startServiceProcess(["--data-dir", dataDir], {}, sourceBin);
    try {
      const created = JSON.parse(runCli(["keys", "create", "--plan", "free", "--json", "--data-dir", dataDir], {}, sourceBin)) as Record<string, string>;
      const key = created.key!;
      const sent = [
        traceBody(key, { model: "gpt-4o-mini", tokens_in: 10, cost_usd: 0.0000015 }),
        traceBody(key, { provider: "gemini", model: "=HYPERLINK(\"x\")", status: "error", error: "quota, \"exceeded\"" }),
        traceBody(key, { model: "tagged", tags: ["=cmd", "b"], metadata: { team: "@ops" }, user_id: "+42" }),
      ];
      for (const body of sent) expect((await postTrace(server.url, body, { key })).status).toBe(202);

      const lines = runCli(["traces", "export", "--data-dir", dataDir]).trim().split("\n");
      const exported = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(exported).toHaveLength(3);
      expect(exported[2]).toMatchObject({ tags: ["=cmd", "b"], metadata: { team: "@ops" }, user_id: "+42" });
      expect(exported[0]).toMatchObject({ provider: "openai", model: "gpt-4o-mini", tokens_in: 10, tokens_out: 350, latency_ms: 842, cost_usd: 0.0000015, status: "success", key_id: created.id });
      expect(exported[1]).toMatchObject({ provider: "gemini", status: "error", error: 'quota, "exceeded"' });
      expect(exported[0]).not.toHaveProperty("api_key");
      expect(Object.keys(exported[0]!)).toEqual(expect.arrayContaining(["received_at", "key_id", "account_id", "country"]));

      const csv = runCli(["traces", "export", "--format", "csv", "--data-dir", dataDir]).trim().split("\n");
      expect(csv[0]).toBe(
        "id,received_at,key_id,account_id,country,provider,model,tokens_in,tokens_out,latency_ms,cost_usd,status,error," +
          "tokens_cached_in,tokens_cache_write,tokens_reasoning,server_cost_usd,price_check,source,otlp_trace_id,otlp_span_id,otlp_parent_span_id,service_name," +
          "user_id,session_id,tags,metadata,environment,ttft_ms,service_tier,tokens_cache_write_1h,tokens_audio_in,tokens_audio_out,web_search_requests,called_at",
      );
      expect(csv[2]).toContain(`"'=HYPERLINK(""x"")"`);
      expect(csv[2]).toContain(`"quota, ""exceeded"""`);
      // Lists and maps are their JSON (which starts with a bracket, no formula); a cell that would run is neutralised.
      expect(csv[3]).toContain(`"[""=cmd"",""b""]","{""team"":""@ops""}"`);
      expect(csv[3]).toContain(`"'+42"`);

      const future = runCli(["traces", "export", "--since", new Date(Date.now() + 60_000).toISOString(), "--data-dir", dataDir]);
      expect(future).toBe("");
      const past = runCli(["traces", "export", "--until", "2020-01-01", "--data-dir", dataDir]);
      expect(past).toBe("");

      runCli(["keys", "revoke", created.id!, "--data-dir", dataDir]);
      const deadline = Date.now() + 5000;
      let status = 202;
      while (status !== 401 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        status = (await postTrace(server.url, traceBody(key), { key })).status;
      }
      expect(status).toBe(401);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});
