import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { runCli, startServiceProcess } from "../support/cli.js";
import { tempDir } from "../support/temp-dir.js";
import { postTrace, traceBody } from "../support/test-service.js";
import { openRaw, type RawConnection, sleep } from "./support/attack.js";

/** A keep-alive HTTP/1.1 request for one trace, as raw text. */
function rawTraceRequest(key: string): string {
  const body = JSON.stringify(traceBody(key));
  return (
    `POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Waits until the connection has received `count` responses (or has closed), for at most `ms`. */
async function responses(connection: RawConnection, count: number, ms = 5000): Promise<string[]> {
  const started = Date.now();
  const split = () => connection.received().split(/(?=HTTP\/1\.1 )/).filter(Boolean);
  while (split().length < count && !connection.isClosed() && Date.now() - started < ms) await sleep(10);
  return split();
}

describe("graceful shutdown", () => {
  it("SIGTERM: keep-alive clients' next requests are answered, with Connection: close, instead of reset", async () => {
    const dataDir = tempDir();
    const server = await startServiceProcess(["--data-dir", dataDir, "--shutdown-grace-ms", "4000"]);
    const key = (JSON.parse(runCli(["keys", "create", "--plan", "pro", "--json", "--data-dir", dataDir])) as { key: string }).key;
    const request = rawTraceRequest(key);
    const clients = await Promise.all(Array.from({ length: 20 }, () => openRaw(server.port)));
    for (const client of clients) client.socket.write(request);
    for (const client of clients) expect((await responses(client, 1))[0]).toMatch(/^HTTP\/1\.1 202/);

    // Every connection is idle between requests when the signal comes.
    server.child.kill("SIGTERM");
    await sleep(200);
    for (const client of clients) client.socket.write(request);
    for (const client of clients) {
      const [, second] = await responses(client, 2);
      expect(second).toMatch(/^HTTP\/1\.1 202/);
      expect(second).toMatch(/\r\nconnection: close\r\n/i);
      // The server closes the connection after that response.
      expect(await client.closedWithin(2000)).toBe(true);
    }
    expect(await server.exited).toBe(0);
  });

  it("SIGTERM while another process holds the database's write lock: exits within its grace period, and every 202 was stored", async () => {
    const dataDir = tempDir();
    const graceMs = 3000;
    const server = await startServiceProcess(["--data-dir", dataDir, "--shutdown-grace-ms", String(graceMs)]);
    const key = (JSON.parse(runCli(["keys", "create", "--plan", "pro", "--json", "--data-dir", dataDir])) as { key: string }).key;
    expect((await postTrace(server.url, traceBody(key), { key })).status).toBe(202);

    // Another process takes the write lock and keeps it: the writer thread cannot commit.
    const betterSqlite3 = createRequire(import.meta.url).resolve("better-sqlite3");
    const script = `const D = require(${JSON.stringify(betterSqlite3)}); const db = new D(${JSON.stringify(join(dataDir, "calltrace.db"))});
      db.exec("BEGIN EXCLUSIVE"); console.log("locked"); setTimeout(() => {}, 60000);`;
    const locker = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise((resolve) => locker.stdout.once("data", resolve));
      const answers = Array.from({ length: 20 }, () => postTrace(server.url, traceBody(key), { key }).then((r) => r.status, () => "no answer"));
      await sleep(300);
      const signalled = performance.now();
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
      expect(performance.now() - signalled).toBeLessThan(graceMs + 500);
      const statuses = await Promise.all(answers);
      locker.kill();
      await new Promise((resolve) => locker.once("exit", resolve));
      const store = openSqliteStore(dataDir);
      let stored = 0;
      for await (const _ of store.exportTraces({})) stored++;
      await store.close();
      expect(stored).toBeGreaterThanOrEqual(1 + statuses.filter((s) => s === 202).length);
    } finally {
      locker.kill();
    }
  });
});
