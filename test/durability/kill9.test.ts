import { describe, expect, it } from "vitest";
import { runCli, startServiceProcess } from "../support/cli.js";
import { postTrace, traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

describe("durability (D13)", () => {
  it("every trace that got a 202 survives kill -9 of the server, with its fields", async () => {
    const dataDir = tempDir();
    const plansFile = `${dataDir}/plans.json`;
    await import("node:fs").then((fs) => fs.writeFileSync(plansFile, JSON.stringify({ bulk: { per_minute: 1_000_000, per_month: 1_000_000_000 } })));
    const key = runCli(["keys", "create", "--plan", "bulk", "--data-dir", dataDir, "--plans-file", plansFile]).trim();
    const server = await startServiceProcess(["--data-dir", dataDir, "--plans-file", plansFile]);

    // Keep sending from several concurrent senders and kill the server while they are mid-flight.
    const accepted: number[] = [];
    let next = 0;
    let killed = false;
    const sender = async () => {
      while (!killed) {
        const n = next++;
        try {
          const response = await postTrace(server.url, traceBody(key, { tokens_in: n, model: `model-${n % 7}` }), { key });
          if (response.status === 202) accepted.push(n);
        } catch {
          // The connection died with the server: that request was not acknowledged.
        }
      }
    };
    const senders = Array.from({ length: 16 }, sender);
    while (accepted.length < 400) await new Promise((r) => setTimeout(r, 10));
    server.child.kill("SIGKILL");
    killed = true;
    expect(await server.exited).toBe("SIGKILL");
    await Promise.all(senders);

    const restarted = await startServiceProcess(["--data-dir", dataDir, "--plans-file", plansFile]);
    restarted.child.kill("SIGTERM");
    await restarted.exited;

    const exported = runCli(["traces", "export", "--data-dir", dataDir, "--plans-file", plansFile])
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { tokens_in: number; model: string; latency_ms: number; status: string });
    const stored = new Set(exported.map((t) => t.tokens_in));
    for (const n of accepted) expect(stored.has(n), `trace ${n} got a 202 but is missing`).toBe(true);
    // Nothing stored twice, and nothing stored that was never sent.
    expect(stored.size).toBe(exported.length);
    for (const t of exported) {
      expect(t.tokens_in).toBeLessThan(next);
      expect(t).toMatchObject({ model: `model-${t.tokens_in % 7}`, latency_ms: 842, status: "success" });
    }
  });
});
