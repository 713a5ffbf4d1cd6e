// What real apps attach to a trace, at realistic cardinality (issue 27): a user of 10,000, a
// session drawn from a million, 2 of 50 tags, two metadata keys and an environment. One source
// for the bodies the load tools send and the traces the store is seeded with.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type StoredTrace, StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";

export const attributedCardinality = { users: 10_000, sessions: 1_000_000, tags: 50, tagsPerTrace: 2, features: 20, teams: 5 };

const environments = ["production", "production", "production", "staging"];

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32), so a seed gives the same traffic every run. */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Attribution {
  userId: string;
  sessionId: string;
  tags: string[];
  metadata: Record<string, string>;
  environment: string;
}

/** One trace's attribution: the user, session, tags and metadata values drawn uniformly. */
export function attribution(rand: () => number): Attribution {
  const c = attributedCardinality;
  const first = Math.floor(rand() * c.tags);
  // A second tag other than the first.
  const second = (first + 1 + Math.floor(rand() * (c.tags - 1))) % c.tags;
  return {
    userId: `user-${Math.floor(rand() * c.users)}`,
    sessionId: `session-${Math.floor(rand() * c.sessions)}`,
    tags: [`tag-${first}`, `tag-${second}`],
    metadata: { feature: `feature-${Math.floor(rand() * c.features)}`, team: `team-${Math.floor(rand() * c.teams)}` },
    environment: environments[Math.floor(rand() * environments.length)]!,
  };
}

/** The same attribution as the REST JSON body's fields (the contract's snake_case names). */
export function attributionJson(a: Attribution): Record<string, unknown> {
  return { user_id: a.userId, session_id: a.sessionId, tags: a.tags, metadata: a.metadata, environment: a.environment };
}

/** A stored trace as the ingest path makes it, with `a`'s attribution: what the store is seeded with. */
export function attributedStoredTrace(
  rand: () => number,
  project: { accountId: string; keyId: string },
  receivedAtMs: number,
): StoredTrace {
  const a = attribution(rand);
  const tokensIn = Math.floor(50 + rand() * 4000);
  const tokensOut = Math.floor(rand() * 800);
  return create(StoredTraceSchema, {
    receivedAt: timestampFromMs(receivedAtMs),
    keyId: project.keyId,
    accountId: project.accountId,
    country: "US",
    provider: "openai",
    model: rand() < 0.5 ? "gpt-4o-2024-08-06" : "gpt-4o-mini",
    tokensIn,
    tokensOut,
    latencyMs: Math.floor(Math.exp(5 + rand() * 3.5)),
    costUsd: (tokensIn * 2.5 + tokensOut * 10) / 1e6,
    status: rand() < 0.03 ? "error" : "success",
    userId: a.userId,
    sessionId: a.sessionId,
    tags: a.tags,
    metadata: a.metadata,
    environment: a.environment,
  });
}
