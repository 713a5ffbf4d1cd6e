import { ConfigError, type Config } from "../config/config.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

/** The configured store: MongoDB when MONGODB_URI is set, otherwise the embedded store under DATA_DIR. */
export async function openStore(config: Pick<Config, "dataDir" | "mongodbUri">): Promise<Store> {
  if (config.mongodbUri !== undefined) {
    throw new ConfigError("MONGODB_URI is set, but this build has no MongoDB store yet; unset it to use the embedded store");
  }
  return openSqliteStore(config.dataDir);
}
