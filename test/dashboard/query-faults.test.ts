import { Writable } from "node:stream";
import Database from "better-sqlite3";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, type RunningService } from "../../src/app.js";
import { resolveConfig } from "../../src/config/config.js";
import { tempDir } from "../support/temp-dir.js";
import { DashboardClient } from "./dashboard-client.js";

/** A fault in a dashboard read (here a store error) is logged with its request id and cause, and answered INTERNAL naming that id. */
describe("dashboard reads: an unexpected store error", () => {
  const lines: Record<string, unknown>[] = [];
  let service: RunningService;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = tempDir();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    service = await startService({ ...resolveConfig({}, {}), port: 0, dataDir }, pino({ level: "info" }, sink));
  });
  afterAll(async () => {
    await service.close(1000);
  });

  it("is logged with the response's request id and the cause, and answered internal, never with the cause", async () => {
    const client = new DashboardClient(service.url);
    await client.signUp("faulty@example.com");
    expect((await client.call("QueryService/GetUsageTotals", { filter: {} })).status).toBe(200);
    // The roll-up table a read needs is gone: a fault, not a refusal.
    const db = new Database(join(dataDir, "calltrace.db"));
    db.exec("DROP TABLE usage_daily");
    db.close();
    const answer = await client.call("QueryService/GetUsageTotals", { filter: {} }, { headers: { "x-request-id": "req-fault-1" } });
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ code: "internal", message: "internal error; request id req-fault-1" });
    expect(answer.headers.get("x-request-id")).toBe("req-fault-1");
    const logged = lines.find((line) => line.msg === "dashboard call failed");
    expect(logged).toMatchObject({ level: 50, reqId: "req-fault-1", procedure: "calltrace.v1.QueryService/GetUsageTotals" });
    expect(JSON.stringify(logged!.err)).toContain("no such table: usage_daily");
  });
});
