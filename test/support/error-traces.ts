import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { call } from "./stored-call.js";

const hour = 3_600_000;
const day = 24 * hour;

/** Failed calls over three days (two whole days and today's part), two kinds of failure and one odd one. */
export function failures(accountId: string, now: number): StoredTrace[] {
  const out: StoredTrace[] = [];
  for (let i = 0; i < 12; i++) {
    out.push(
      call({
        accountId,
        at: now - (i % 3) * day - 60_000 * (i + 1),
        status: "error",
        error: `429 Rate limit reached for requests: limit ${1000 + i}, request id req_${i}AbCdEfGh`,
        model: i % 4 === 0 ? "gpt-4o-mini" : "gpt-4o",
        keyId: i % 2 === 0 ? "key_a" : "key_b",
        userId: `user-${i % 5}`,
        costUsd: 0.002,
      }),
    );
  }
  for (let i = 0; i < 5; i++) {
    out.push(
      call({
        accountId,
        at: now - i * 7 * hour - 30_000,
        status: "error",
        error: `model "claude-${i}" not found`,
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        costUsd: 0,
      }),
    );
  }
  out.push(call({ accountId, at: now - 2 * hour, status: "error", model: "gpt-4o-mini" }));
  for (let i = 0; i < 6; i++) out.push(call({ accountId, at: now - i * 9 * hour - 1000 }));
  return out;
}
