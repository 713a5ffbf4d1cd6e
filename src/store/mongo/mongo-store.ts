import { MongoClient } from "mongodb";
import type { Store } from "../store.js";
import type { TraceQuery } from "../trace-store.js";
import { retentionMs, type RetentionOptions } from "../retention.js";
import { prepareMongoCollections } from "./mongo-collections.js";
import { mongoOtlpSpans } from "./mongo-otlp-spans.js";
import { mongoScopeCounters } from "./mongo-scope-counters.js";
import { mongoKeyStore } from "./mongo-key-store.js";
import { objectIdIds, traceFromDoc } from "./mongo-trace-doc.js";
import { mongoTraceReader, traceMatch } from "./mongo-trace-reader.js";
import { mongoMonthlyTraceCount } from "./mongo-trace-counts.js";
import { mongoTraceWriter } from "./mongo-trace-writer.js";
import { mongoTeamStore } from "./mongo-team-store.js";
import { upgradeToTeams } from "./mongo-teams-upgrade.js";
import { mongoPriceStore } from "./mongo-price-store.js";
import { mongoUserStore } from "./mongo-user-store.js";
import { mongoAlertStore } from "./mongo-alert-store.js";
import { defaultValuesPerDay, type ValueCapOptions } from "../value-cap.js";

export interface MongoStoreOptions extends RetentionOptions, ValueCapOptions {
  /** Bound on one write, and so on how long a request can wait for a store that is down. Default 5000. */
  writeTimeoutMs?: number;
  /** Set false to keep traces in an ordinary collection even where time-series collections exist. */
  timeSeries?: boolean;
  /** Told once which mode the server allowed (time-series or ordinary collection, server or store expiry). */
  onReady?: (mode: { timeSeries: boolean; serverExpiry: boolean; oneAccumulatorPerGroup: boolean }) => void;
}

/** How long an Idempotency-Key is remembered (D14). */
const idempotencyWindowMs = 24 * 60 * 60 * 1000;
/** How often the store deletes expired documents where the server does not. */
const sweepIntervalMs = 10 * 60 * 1000;

/** The database named in the URI's path, or `calltrace`. */
function databaseName(uri: string): string {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/.exec(uri)?.[1];
  return path ? decodeURIComponent(path) : "calltrace";
}

/**
 * The MongoDB store (MONGODB_URI), for several stateless service instances sharing one replica
 * set or sharded cluster. Works with MongoDB 6+ and with servers that lack time-series
 * collections, TTL indexes or most of the aggregation language (FerretDB, DocumentDB, Cosmos DB).
 */
export async function openMongoStore(uri: string, options: MongoStoreOptions = {}): Promise<Store> {
  const writeTimeoutMs = options.writeTimeoutMs ?? 5000;
  const client = new MongoClient(uri, {
    appName: "calltrace",
    // A server that is down must turn into a 503 quickly, not a request that hangs.
    serverSelectionTimeoutMS: Math.min(writeTimeoutMs, 5000),
    connectTimeoutMS: Math.min(writeTimeoutMs, 5000),
  });
  await client.connect();
  const keepMs = retentionMs(options);
  try {
    const c = await prepareMongoCollections(client.db(databaseName(uri)), {
      expireAfterSeconds: Math.round(keepMs / 1000),
      timeSeries: options.timeSeries ?? true,
      idempotencyWindowSeconds: idempotencyWindowMs / 1000,
    });
    await upgradeToTeams(c);
    const teams = mongoTeamStore(c);
    options.onReady?.({ timeSeries: c.capabilities.timeSeries, serverExpiry: c.capabilities.ttl, oneAccumulatorPerGroup: !c.capabilities.manyAccumulators });

    const deleteExpired = async () => {
      const now = Date.now();
      await c.idempotency.deleteMany({ createdAt: { $lt: new Date(now - idempotencyWindowMs) } });
      // A time-series collection expires its own buckets; deleting from one by time needs MongoDB 7.
      if (keepMs > 0 && !c.capabilities.timeSeries) await c.traces.deleteMany({ receivedAt: { $lt: new Date(now - keepMs) } });
      if (keepMs > 0 && !c.capabilities.ttl) await c.groupValues.deleteMany({ day: { $lt: new Date(now - keepMs - 86_400_000) } });
      // Projects that keep their traces for less (docs/teams.md). Where the server cannot delete from a
      // time-series collection by time, reads still never return them (the project's retention narrows every read).
      for (const project of await c.accounts.find({ retentionDays: { $gt: 0 } }).toArray()) {
        await c.traces
          .deleteMany({ "meta.accountId": project._id, receivedAt: { $lt: new Date(now - project.retentionDays! * 86_400_000) } })
          .catch(() => {});
      }
    };
    const sweeper = setInterval(() => void deleteExpired().catch(() => {}), sweepIntervalMs).unref();
    void deleteExpired().catch(() => {});

    return {
      ...mongoTraceReader(c, keepMs),
      monthlyTraceCount: mongoMonthlyTraceCount(c, writeTimeoutMs),
      keys: mongoKeyStore(c, { timeoutMs: writeTimeoutMs }),
      users: mongoUserStore(c),
      teams,
      alerts: mongoAlertStore(c),
      prices: mongoPriceStore(c),
      scopeCounters: mongoScopeCounters(c),
      otlpSpans: mongoOtlpSpans(c),
      writeBatch: mongoTraceWriter(c, {
        idempotencyWindowMs,
        inFlightMs: 2 * writeTimeoutMs,
        timeoutMs: writeTimeoutMs,
        claimReadWaitMs: Math.min(250, writeTimeoutMs / 4),
        groupValuesPerDay: options.groupValuesPerDay ?? defaultValuesPerDay,
      }),
      // A few batches at once: one whose retries need reads (or whose server is slow) holds up its
      // own traces, not every key's.
      handover: { maxInFlight: 4, batchSize: Number.MAX_SAFE_INTEGER },
      async *exportTraces(query: TraceQuery) {
        const since = Math.max(query.since?.getTime() ?? 0, keepMs === 0 ? 0 : Date.now() - keepMs);
        const cursor = c.traces
          .find(traceMatch(query.accountId, { sinceMs: since, untilMs: query.until?.getTime() ?? 8_640_000_000_000_000 }))
          .sort({ receivedAt: 1, _id: 1 })
          .batchSize(1000);
        const ids = objectIdIds(c.traceIdKey);
        for await (const doc of cursor) yield traceFromDoc(doc, ids.idOf(doc._id));
      },
      async modelCalls(since: Date) {
        const from = Math.max(since.getTime(), keepMs === 0 ? 0 : Date.now() - keepMs);
        const rows = await c.traces
          .aggregate<{ _id: { provider: string; model: string }; calls: number }>([
            { $match: traceMatch(undefined, { sinceMs: from, untilMs: 8_640_000_000_000_000 }) },
            { $group: { _id: { provider: "$meta.provider", model: "$meta.model" }, calls: { $sum: 1 } } },
          ])
          .toArray();
        return rows.map((row) => ({ provider: row._id.provider, model: row._id.model, calls: Number(row.calls) }));
      },
      deleteExpired,
      async ping() {
        await client.db("admin").command({ ping: 1 }, { timeoutMS: writeTimeoutMs });
      },
      async close() {
        if (sweeper) clearInterval(sweeper);
        await client.close();
      },
    };
  } catch (error) {
    await client.close();
    throw error;
  }
}
