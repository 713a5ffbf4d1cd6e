import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { BatchingWriter, WriterQueueFullError } from "../../src/ingest/batching-writer.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { TraceStore, TraceWrite, WriteOutcome } from "../../src/store/trace-store.js";
import { tempDir } from "../support/temp-dir.js";

const write = (n: number): TraceWrite => ({
  trace: create(StoredTraceSchema, { receivedAt: timestampNow(), keyId: "key_w", accountId: "acc_w", provider: "openai", model: "m", tokensIn: n, status: "success" }),
  idempotencyKey: undefined,
});

/**
 * A store that commits through the embedded store, but whose answers the test controls: it can
 * hold a batch (a store that is slow or down) or fail some of its writes (documents the server
 * rejects). The writer's rules are about timing and outcomes, which a real server cannot be
 * made to produce on cue.
 */
async function controlledStore() {
  const real = openSqliteStore(tempDir());
  // The first commit may pay for start-up work; the timings below are about the writer.
  await real.writeBatch([write(-1)]);
  const batches: number[] = [];
  let hold: Promise<void> | undefined;
  let failOdd = false;
  const store: Pick<TraceStore, "writeBatch"> = {
    async writeBatch(writes) {
      batches.push(writes.length);
      if (hold) await hold;
      const outcomes = await real.writeBatch(writes);
      return failOdd ? outcomes.map((o, i): WriteOutcome => (writes[i]!.trace.tokensIn % 2 ? { kind: "failed", error: new Error("rejected") } : o)) : outcomes;
    },
  };
  return {
    store: store as TraceStore,
    real,
    batches,
    hold(until: Promise<void>) {
      hold = until;
    },
    failOddWrites() {
      failOdd = true;
    },
  };
}

describe("batching writer (group commit, D13)", () => {
  it("commits concurrent writes together, each settled only once its batch is committed", async () => {
    const s = await controlledStore();
    const writer = new BatchingWriter(s.store, { maxWaitMs: 5, maxBatch: 100 });
    const outcomes = await Promise.all(Array.from({ length: 250 }, (_, n) => writer.write(write(n))));
    expect(outcomes.every((o) => o.kind === "stored")).toBe(true);
    expect(s.batches.reduce((a, b) => a + b, 0)).toBe(250);
    expect(Math.max(...s.batches)).toBeLessThanOrEqual(100);
    expect(s.batches.length).toBeLessThanOrEqual(5);
    expect(writer.stats).toEqual({ batches: s.batches.length, writes: 250 });
    await s.real.close();
  });

  it("answers each write of a batch its own outcome: a rejected write fails alone", async () => {
    const s = await controlledStore();
    s.failOddWrites();
    const writer = new BatchingWriter(s.store, { maxWaitMs: 5 });
    const outcomes = await Promise.all([0, 1, 2, 3].map((n) => writer.write(write(n))));
    expect(outcomes.map((o) => o.kind)).toEqual(["stored", "failed", "stored", "failed"]);
    expect(s.batches).toEqual([4]);
    await s.real.close();
  });

  it("refuses at once beyond its queue bound, and fails a write the store has not answered within the timeout", async () => {
    const s = await controlledStore();
    let release!: () => void;
    s.hold(new Promise<void>((r) => (release = r)));
    const writer = new BatchingWriter(s.store, { maxWaitMs: 1, maxBatch: 5, maxQueue: 10, timeoutMs: 1000 });
    const first = Array.from({ length: 5 }, (_, n) => writer.write(write(n))); // the batch that hangs
    await new Promise((r) => setTimeout(r, 20));
    const queued = Array.from({ length: 10 }, (_, n) => writer.write(write(100 + n)));
    await expect(writer.write(write(999))).rejects.toBeInstanceOf(WriterQueueFullError);

    const started = performance.now();
    const settled = await Promise.all([...first, ...queued]);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(settled.every((o) => o.kind === "failed")).toBe(true);
    expect(writer.depth).toBe(0);
    // Never handed to the store: nothing to come. The held batch's writes: its commit's outcome is.
    expect(settled.slice(5).map((o) => o.kind === "failed" && o.committed)).toEqual(Array(10).fill(undefined));
    const committed = settled.slice(0, 5).map((o) => (o.kind === "failed" ? o.committed : undefined));

    // The store answers again: the held batch is committed after all, and told; new writes are stored; drain waits for them.
    release();
    expect(await Promise.all(committed)).toEqual(Array(5).fill({ kind: "stored" }));
    const later = writer.write(write(7));
    await writer.drain();
    expect(await later).toEqual({ kind: "stored" });
    await s.real.close();
  });

  it("drains without a time limit by waiting on the commits alone, never on a timer Node cannot hold", async () => {
    const s = await controlledStore();
    let release!: () => void;
    s.hold(new Promise<void>((r) => (release = r)));
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const writer = new BatchingWriter(s.store, { maxWaitMs: 1000 });
      const held = writer.write(write(1));
      let drained = false;
      const draining = writer.drain().then(() => (drained = true));
      // A timer of Infinity ms fires after 1 ms (TimeoutOverflowWarning): drain would spin on it.
      await new Promise((r) => setTimeout(r, 50));
      expect(drained).toBe(false);
      release();
      await draining;
      expect(await held).toEqual({ kind: "stored" });
      expect(warnings).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await s.real.close();
    }
  });
});
