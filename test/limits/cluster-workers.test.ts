import { Agent, request } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, startServiceProcess } from "../support/cli.js";
import { traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

/** One POST on a connection of its own, so the cluster's round robin spreads them over the workers. */
function postOnNewConnection(url: string, key: string): Promise<{ status: number; remaining: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/traces`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", connection: "close" },
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, remaining: String(res.headers["x-ratelimit-remaining"]) }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(traceBody(key)));
  });
}

/** One POST over `agent`'s keep-alive connections; answers the status. */
function postOn(agent: Agent, url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/traces`, { method: "POST", agent, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", reject);
    req.end(JSON.stringify(traceBody(key)));
  });
}

describe("serve --workers N without Redis", () => {
  it("two cluster workers on one port and one DATA_DIR together admit exactly the plan's per-minute limit", async () => {
    const dataDir = tempDir();
    const plansFile = join(dataDir, "plans.json");
    writeFileSync(plansFile, JSON.stringify({ tiny: { per_minute: 10, per_month: 1000 } }));
    const key = runCli(["keys", "create", "--plan", "tiny", "--data-dir", dataDir, "--plans-file", plansFile]).trim();
    const server = await startServiceProcess(["--workers", "2", "--data-dir", dataDir, "--plans-file", plansFile]);
    try {
      const deadline = Date.now() + 30_000;
      while (server.lines.filter((l) => l.includes('"msg":"listening"')).length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const workerPids = new Set(server.lines.filter((l) => l.includes('"msg":"listening"')).map((l) => (JSON.parse(l) as { pid: number }).pid));
      expect(workerPids.size).toBe(2);

      const results = await Promise.all(Array.from({ length: 24 }, () => postOnNewConnection(server.url, key)));
      const counts: Record<number, number> = {};
      for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
      expect(counts).toEqual({ 202: 10, 429: 14 });
      // Each remaining count from 9 down to 0 was handed out once: one window, not one per worker.
      expect(results.filter((r) => r.status === 202).map((r) => Number(r.remaining)).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
    const stored = runCli(["traces", "export", "--data-dir", dataDir]).trim().split("\n");
    expect(stored).toHaveLength(10);
  });

  it("a primary that stalls for longer than the workers wait for it makes no request fail: the workers count on their own meanwhile", async () => {
    const dataDir = tempDir();
    const key = runCli(["keys", "create", "--plan", "pro", "--data-dir", dataDir]).trim();
    const server = await startServiceProcess(["--workers", "2", "--data-dir", dataDir]);
    try {
      const deadline = Date.now() + 30_000;
      while (server.lines.filter((l) => l.includes('"msg":"listening"')).length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      // Connections the workers already hold (the primary hands out new ones, so it must not be needed).
      const agent = new Agent({ keepAlive: true, maxSockets: 10 });
      expect((await Promise.all(Array.from({ length: 10 }, () => postOn(agent, server.url, key)))).every((s) => s === 202)).toBe(true);
      // The primary holds the shared counters; stopped, it answers nobody for 1.5 s.
      process.kill(server.child.pid!, "SIGSTOP");
      const stalled = Promise.all(Array.from({ length: 10 }, () => postOn(agent, server.url, key)));
      await new Promise((r) => setTimeout(r, 1500));
      process.kill(server.child.pid!, "SIGCONT");
      expect(await stalled).toEqual(Array.from({ length: 10 }, () => 202));
      agent.destroy();
    } finally {
      process.kill(server.child.pid!, "SIGCONT");
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  });
});
