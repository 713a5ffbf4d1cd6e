// What the MongoDB writer's look-up of stored OTLP calls costs (D63: before claiming an OTLP
// batch's calls, one find per project of their trace ids among the stored traces). Against the test
// server (FerretDB 1.24, SQLite backend) or MONGODB_URI's. In alternate turns on one store grown to
// each of SEEDS OTLP calls: writeBatch of a fresh batch of 50 OTLP calls (the look-up included) and the
// look-up alone for another fresh batch's trace ids (store.otlpSpans, the same find). CPU time of
// this process and of the database server, per batch: the look-up's share of a batch's cost.
//   node --import tsx bench/mongo-otlp-lookup.ts      (writes its section of bench/RESULTS.md)
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, TraceSource } from "../gen/calltrace/v1/trace_pb.js";
import { openMongoStore } from "../src/store/mongo/mongo-store.js";
import type { TraceWrite } from "../src/store/trace-store.js";
import { startMongoTestServer } from "../test/support/ferretdb.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const seeds = (process.env.SEEDS ?? "1000,4000").split(",").map(Number);
const batchesPerTurn = Number(process.env.BATCHES ?? 40);
const turns = Number(process.env.TURNS ?? 3);
const account = "acc_otlp_bench";
const spansPerTrace = 5;
const batchSize = 50;

/** A batch of OTLP calls: batchSize / spansPerTrace fresh traces of spansPerTrace spans each. */
function otlpBatch(at: number): TraceWrite[] {
  return Array.from({ length: batchSize / spansPerTrace }, () => randomBytes(16).toString("hex")).flatMap((traceId) =>
    Array.from({ length: spansPerTrace }, () => {
      const spanId = randomBytes(8).toString("hex");
      const trace = create(StoredTraceSchema, {
        receivedAt: timestampFromMs(at),
        keyId: "key_otlp_bench",
        accountId: account,
        provider: "openai",
        model: "gpt-4o",
        tokensIn: 1200,
        tokensOut: 350,
        latencyMs: 842,
        costUsd: 0.0065,
        status: "success",
        source: TraceSource.OTLP,
        otlpTraceId: traceId,
        otlpSpanId: spanId,
      });
      return { trace, idempotencyKey: `${traceId}:${spanId}` };
    }),
  );
}

/** CPU milliseconds so far of this process and of the database server (when it runs here). */
function cpuMs(serverPid: number | undefined): { own: number; server: number } {
  const usage = process.cpuUsage();
  let server = 0;
  if (serverPid !== undefined) {
    const fields = readFileSync(`/proc/${serverPid}/stat`, "utf8").split(") ")[1]!.split(" ");
    server = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 1/100 s
  }
  return { own: (usage.user + usage.system) / 1000, server };
}

const mongo = await startMongoTestServer();
const serverName = process.env.MONGODB_URI ? "MONGODB_URI's server" : "FerretDB v1.24.2 (SQLite backend, same machine)";
const children = execFileSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" });
const serverPid = process.env.MONGODB_URI ? undefined : Number(/(\d+)\s+ferretdb/.exec(children)?.[1]);
const store = await openMongoStore(mongo.freshUri());
try {
  const rows: (string | number)[][] = [];
  const shares: string[] = [];
  const loads: string[] = [];
  let seeded = 0;
  for (const size of seeds) {
    // Grown to `size` OTLP calls, an hour back; then measured.
    for (; seeded < size; seeded += 500) {
      const at = Date.now() - 3_600_000;
      await store.writeBatch(Array.from({ length: 10 }, () => otlpBatch(at)).flat());
    }
    const totals = { write: { own: 0, server: 0, wall: 0 }, lookup: { own: 0, server: 0, wall: 0 } };
    const measure = async (into: { own: number; server: number; wall: number }, work: () => Promise<unknown>) => {
      const before = cpuMs(serverPid);
      const started = performance.now();
      for (let i = 0; i < batchesPerTurn; i++) await work();
      into.wall += performance.now() - started;
      const after = cpuMs(serverPid);
      into.own += after.own - before.own;
      into.server += after.server - before.server;
    };
    for (let turn = 0; turn < turns; turn++) {
      loads.push(loadavg()[0]!.toFixed(1));
      await measure(totals.write, () => store.writeBatch(otlpBatch(Date.now())));
      await measure(totals.lookup, () => store.otlpSpans(account, [...new Set(otlpBatch(Date.now()).map((w) => w.trace.otlpTraceId))]));
    }
    const n = batchesPerTurn * turns;
    const per = (t: { own: number; server: number; wall: number }) => [(t.own / n).toFixed(2), (t.server / n).toFixed(2), ((t.own + t.server) / n).toFixed(2), (t.wall / n).toFixed(2)];
    const share = (totals.lookup.own + totals.lookup.server) / (totals.write.own + totals.write.server);
    const stored = seeded.toLocaleString("en");
    rows.push([stored, "writeBatch (claims, insertMany, the look-up included)", ...per(totals.write)]);
    rows.push([stored, "the look-up alone (one find of the batch's 10 trace ids)", ...per(totals.lookup)]);
    shares.push(`${(share * 100).toFixed(0)}% at ${stored}`);
    console.error(`${stored} stored: the look-up is ${(share * 100).toFixed(1)}% of a batch's CPU`);
  }
  writeResultsSection(
    "mongo-otlp-lookup",
    `## MongoDB: the look-up of stored OTLP calls per batch (\`node --import tsx bench/mongo-otlp-lookup.ts\`, bench/mongo-otlp-lookup.ts)

${machineLine()}; server: ${serverName}; load average ${loads.join(", ")} at the turns' starts (2 cores shared with other work). One project's store grown to each size in turn; at each, ${turns} alternating turns of ${batchesPerTurn} batches of ${batchSize} OTLP calls (${batchSize / spansPerTrace} traces of ${spansPerTrace} spans). CPU time per batch, of this process and of the server (its /proc clock ticks of 10 ms, summed over a turn).

${table(["stored OTLP calls", "per batch of 50 OTLP calls", "client CPU ms", "server CPU ms", "CPU ms", "wall ms"], rows)}

The look-up's share of a batch's CPU: ${shares.join(", ")}. Kept: it is what finds an OTLP call stored before under a claim that has expired, or that an older release named by key (D63), which no claim can. FerretDB 1.24 pushes no filter down to its SQLite tables (explain: \`filterPushdown: false\`), so this find reads every stored trace: it is about all a batch costs there (the claims and the \`insertMany\` are lost in the noise of 10 ms ticks) and grows with the store; on MongoDB it is a seek of the (project, OTLP trace id) index per trace id.`,
  );
} finally {
  await store.close();
  await mongo.close();
}
