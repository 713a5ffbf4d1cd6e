import { afterAll, beforeAll } from "vitest";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { startMongoTestServer, type MongoTestServer } from "./ferretdb.js";
import { tempDir } from "./temp-dir.js";

export type OpenStore = (options?: { retentionDays?: number }) => Promise<{ store: Store; reopen: () => Promise<Store> }>;

/**
 * Every store adapter, for contract suites that hold them all to one behaviour: the embedded
 * store and the MongoDB store (FerretDB here, or MONGODB_URI's server, where the
 * ordinary-collection mode runs too). A new adapter joins by adding a line here. Call at the top
 * level of a test file: it starts the MongoDB test server for the file.
 */
export function storeAdapters(): [string, OpenStore][] {
  let mongo: MongoTestServer;
  beforeAll(async () => {
    mongo = await startMongoTestServer();
  });
  afterAll(async () => {
    await mongo?.close();
  });
  const adapters: [string, OpenStore][] = [
    [
      "embedded (SQLite)",
      async (options) => {
        const dir = tempDir();
        return { store: openSqliteStore(dir, options), reopen: async () => openSqliteStore(dir, options) };
      },
    ],
    [
      "MongoDB",
      async (options) => {
        const uri = mongo.freshUri();
        return { store: await openMongoStore(uri, options), reopen: () => openMongoStore(uri, options) };
      },
    ],
  ];
  if (process.env.MONGODB_URI) {
    // FerretDB has only this mode; a real MongoDB runs both.
    adapters.push([
      "MongoDB, ordinary collection",
      async (options) => {
        const uri = mongo.freshUri();
        const o = { ...options, timeSeries: false };
        return { store: await openMongoStore(uri, o), reopen: () => openMongoStore(uri, o) };
      },
    ]);
  }
  return adapters;
}
