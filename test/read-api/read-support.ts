import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { mintApiKey } from "../../src/auth/api-key.js";
import type { KeyScope } from "../../src/store/records.js";
import type { Store } from "../../src/store/store.js";
import { seededRandom } from "../support/seeded-random.js";

export const day = 86_400_000;

/** A project of its own with one key of each scope (made in the store, as the CLI makes them). */
export async function projectWithKeys(store: Store, plan = "pro") {
  const { project } = await store.teams.createOrganization({ name: "read api", project: { name: "reads", plan } });
  const key = async (scope: KeyScope) => {
    const minted = mintApiKey();
    const record = await store.keys.createKey({ accountId: project.id, name: scope, scope, hash: minted.hash, prefix: minted.prefix });
    return { key: minted.plaintext, id: record.id };
  };
  return { projectId: project.id, ingest: await key("ingest"), read: await key("read") };
}

/** GETs a read route, with `key` as the bearer token when given. */
export function readGet(baseUrl: string, pathAndQuery: string, key?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${baseUrl}${pathAndQuery}`, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
}

const models = [
  ["openai", "gpt-4o-2024-08-06"],
  ["openai", "gpt-4o-mini"],
  ["anthropic", "claude-sonnet-4-5"],
  ["gemini", "gemini-2.5-flash"],
] as const;

/**
 * `count` traces of the project spread over the last `days` days (a realistic mix of models,
 * errors, users, sessions, tags, metadata, environments and latencies from 20 ms to 30 s), written
 * to the store as the ingest pipeline writes them, received at the times a real sender spreads.
 */
export async function seedTraces(
  store: Store,
  projectId: string,
  keyId: string,
  count: number,
  days: number,
  seed: number,
): Promise<StoredTrace[]> {
  const random = seededRandom(seed);
  const now = Date.now();
  const traces = Array.from({ length: count }, (_, i) => {
    const [provider, model] = random.pick(models);
    const failed = random.next() < 0.12;
    const tokensIn = 50 + random.int(4000);
    const tokensOut = 10 + random.int(1500);
    const tags = ["chat", "search", "summarize", "eval"].filter(() => random.next() < 0.35);
    const metadata: Record<string, string> = {};
    if (random.next() < 0.7) metadata.team = random.pick(["growth", "support", "infra"]);
    if (random.next() < 0.4) metadata.service = random.pick(["api", "worker"]);
    return create(StoredTraceSchema, {
      receivedAt: timestampFromMs(now - random.int(days * day) - i),
      keyId,
      accountId: projectId,
      country: random.pick(["DE", "US", "FR", ""]),
      provider,
      model,
      tokensIn,
      tokensOut,
      latencyMs: Math.round(20 * Math.exp(random.next() * Math.log(1500))),
      costUsd: Math.round((tokensIn * 2.5 + tokensOut * 10) * 1e-6 * 1e9) / 1e9,
      status: failed ? "error" : "success",
      ...(failed ? { error: random.pick(["rate limited", "context length exceeded", "timeout"]) } : {}),
      ...(random.next() < 0.8 ? { userId: `user-${random.int(12)}` } : {}),
      ...(random.next() < 0.6 ? { sessionId: `session-${random.int(30)}` } : {}),
      tags,
      metadata,
      ...(random.next() < 0.9 ? { environment: random.pick(["production", "staging"]) } : {}),
    });
  });
  const outcomes = await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
  if (outcomes.some((o) => o.kind !== "stored"))
    throw new Error(`seeding failed: ${JSON.stringify(outcomes.find((o) => o.kind !== "stored"))}`);
  return traces;
}
