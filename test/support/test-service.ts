import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { mintApiKey } from "../../src/auth/api-key.js";
import { resolveConfig, type Config } from "../../src/config/config.js";
import { startService, type RunningService } from "../../src/app.js";
import { createLogger } from "../../src/log/logger.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { atFileEnd } from "./file-end.js";
import { tempDir } from "./temp-dir.js";

export interface TestService extends RunningService {
  config: Config;
  /** A second connection to the service's embedded store, as the CLI would open it. */
  store: Store;
  /** Creates an account on `plan` with one key and returns the plaintext key and its id. */
  createKey(plan?: string): Promise<{ key: string; id: string; accountId: string }>;
}

/**
 * Starts the real service in this process on a free loopback port with a fresh embedded store,
 * and stops it after the test file (test/support/file-end.ts), from a beforeAll too.
 */
export async function startTestService(
  overrides: Partial<Config> & { plans?: Record<string, { per_minute: number; per_month: number; max_keys?: number }> } = {},
): Promise<TestService> {
  const dataDir = tempDir();
  const { plans, ...configOverrides } = overrides;
  let plansFile: string | undefined;
  if (plans) {
    plansFile = join(dataDir, "plans.json");
    writeFileSync(plansFile, JSON.stringify(plans));
  }
  // Tests' webhook receivers listen on loopback (D62 refuses it by default).
  const config: Config = {
    ...resolveConfig({}, {}),
    port: 0,
    dataDir,
    logLevel: "silent",
    alertPrivateUrls: true,
    ...(plansFile ? { plansFile } : {}),
    ...configOverrides,
  };
  const service = await startService(config, createLogger(config.logLevel));
  const store = openSqliteStore(config.dataDir);
  // Once, whether a test closes it first or the file's end does.
  let closed: Promise<void> | undefined;
  const close = (graceMs?: number) => (closed ??= service.close(graceMs));
  atFileEnd(async () => {
    await close(1000);
    await store.close();
  });
  return {
    ...service,
    close,
    config,
    store,
    async createKey(plan = "free") {
      const account = (await store.teams.createOrganization({ name: "test", project: { name: "test", plan: plan } })).project;
      const minted = mintApiKey();
      const record = await store.keys.createKey({ accountId: account.id, name: "test", hash: minted.hash, prefix: minted.prefix });
      return { key: minted.plaintext, id: record.id, accountId: account.id };
    },
  };
}

/** A valid trace body for `key`, with any field overridden (undefined removes it). */
export function traceBody(key: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    provider: "openai",
    model: "gpt-4o-2024-08-06",
    tokens_in: 1200,
    tokens_out: 350,
    latency_ms: 842,
    cost_usd: 0.0065,
    api_key: key,
    status: "success",
    ...overrides,
  };
  for (const [name, value] of Object.entries(body)) if (value === undefined) delete body[name];
  return body;
}

/** POSTs a JSON body (or raw text) to /v1/traces with the key as bearer token. */
export function postTrace(
  url: string,
  body: unknown,
  options: { key?: string | undefined; headers?: Record<string, string>; raw?: string | Uint8Array } = {},
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  return fetch(`${url}/v1/traces`, { method: "POST", headers, body: (options.raw ?? JSON.stringify(body)) as BodyInit });
}
