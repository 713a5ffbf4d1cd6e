import type { Config } from "../config/config.js";
import type { Logger } from "../log/logger.js";
import { openMongoStore } from "./mongo/mongo-store.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

/** The configured store: MongoDB when MONGODB_URI is set, otherwise the embedded store under DATA_DIR. */
export async function openStore(
  config: Pick<Config, "dataDir" | "mongodbUri"> & { retentionDays?: number; writeTimeoutMs?: number; groupValuesPerDay?: number; groupRankInSql?: boolean; attributeSetsRead?: boolean },
  logger?: Logger,
): Promise<Store> {
  const retention = config.retentionDays === undefined ? {} : { retentionDays: config.retentionDays };
  if (config.mongodbUri !== undefined) {
    return openMongoStore(config.mongodbUri, {
      ...retention,
      ...(config.groupValuesPerDay === undefined ? {} : { groupValuesPerDay: config.groupValuesPerDay }),
      ...(config.writeTimeoutMs === undefined ? {} : { writeTimeoutMs: config.writeTimeoutMs }),
      onReady: (mode) =>
        logger?.info(
          {
            traces: mode.timeSeries ? "time-series collection" : "ordinary collection (the server has no time-series collections)",
            expiry: mode.serverExpiry ? "server (TTL)" : "store (the server has no TTL indexes)",
            aggregation: mode.oneAccumulatorPerGroup ? "one accumulator per $group" : "full",
          },
          "mongodb store ready",
        ),
    });
  }
  return openSqliteStore(config.dataDir, {
    ...retention,
    ...(config.groupRankInSql === undefined ? {} : { groupRankInSql: config.groupRankInSql }),
    ...(config.attributeSetsRead === undefined ? {} : { attributeSetsRead: config.attributeSetsRead }),
    ...(config.groupValuesPerDay === undefined ? {} : { groupValuesPerDay: config.groupValuesPerDay }),
  });
}
