import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import { describe, expect, it } from "vitest";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { SignUpRequestSchema } from "../../gen/calltrace/v1/auth_service_pb.js";
import { TraceSchema, type Trace } from "../../gen/calltrace/v1/trace_pb.js";
import { compileQuickValidity } from "../../src/ingest/quick-validity.js";

const validator = createValidator();
const quick = compileQuickValidity(TraceSchema);

/** Values for each field: valid ones, boundaries on both sides, wrong members, and unset. */
const candidates: Record<string, unknown[]> = {
  provider: ["openai", "anthropic", "gemini", "", "OpenAI", "azure", undefined],
  model: ["gpt-4o", "m", "", "x".repeat(256), "x".repeat(257), "😀".repeat(128), "😀".repeat(129), undefined],
  tokensIn: [0, 1, 2147483647, -1, -2147483648, undefined],
  tokensOut: [0, 350, -5, undefined],
  latencyMs: [0, 842, -1, undefined],
  costUsd: [0, 0.0065, 1e300, -0, -0.01, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, undefined],
  apiKey: ["ct_key", "", undefined],
  status: ["success", "error", "", "ok", undefined],
  error: [undefined, "", "rate limited", "e".repeat(4096), "e".repeat(4097)],
  // Parts of tokens_in and tokens_out (0 to 2147483647 each): within, at and past their totals.
  tokensCachedIn: [undefined, 0, 1, 2147483647, -1],
  tokensCacheWrite: [undefined, 0, 2147483647, -3],
  tokensReasoning: [undefined, 0, 350, 351, -1],
  userId: [undefined, "user-1", "", "u".repeat(256), "u".repeat(257)],
  tags: [
    undefined,
    ["checkout"],
    [],
    ["t".repeat(64)],
    ["t".repeat(65)],
    Array.from({ length: 20 }, (_, i) => `t${i}`),
    Array.from({ length: 21 }, (_, i) => `t${i}`),
  ],
  metadata: [
    undefined,
    { team: "search" },
    { "a.b_c-9": "v".repeat(512) },
    { team: "v".repeat(513) },
    { "bad key": "x" },
    { "": "x" },
    { ["k".repeat(65)]: "x" },
    Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, "v"])),
    Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"])),
  ],
  ttftMs: [undefined, 0, 842, 843, -1],
  // Billing modes: one value each outside its rule (1-hour writes need tokens_cache_write).
  serviceTier: [undefined, "standard", "batch", "flex", "priority", "scale"],
  tokensCacheWrite1h: [undefined, 0, 0, 0, 1],
  tokensAudioIn: [undefined, 0, 0, 1, -1],
  tokensAudioOut: [undefined, 0, 0, 350, 351],
  webSearchRequests: [undefined, 0, 3, 3, -1],
  // Bounded by the pipeline, not by a rule: any timestamp, even an odd one, is the rules' valid.
  calledAt: [undefined, timestampFromMs(Date.UTC(2026, 10, 26)), { seconds: -1n, nanos: 2_000_000_000 }],
};

/** A deterministic pseudo-random walk over the combinations (all of them would be millions). */
function* traces(count: number): Generator<Trace> {
  let seed = 2463534242;
  const next = () => {
    // xorshift32
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  for (let n = 0; n < count; n++) {
    const init: Record<string, unknown> = {};
    for (const [field, values] of Object.entries(candidates)) {
      // Mostly the first (valid) value, so that traces with one or two problems are common.
      const value = next() % 3 === 0 ? values[next() % values.length] : values[n % 2 === 0 ? 0 : Math.min(1, values.length - 1)];
      if (value !== undefined) init[field] = value;
    }
    yield create(TraceSchema, init as MessageInitShape<typeof TraceSchema>);
  }
}

describe("quick validity (compiled protovalidate rules)", () => {
  it("never calls valid what protovalidate refuses, and calls valid what protovalidate passes", () => {
    const seen = { valid: 0, invalid: 0, deferredValid: 0 };
    for (const trace of traces(70_000)) {
      const valid = validator.validate(TraceSchema, trace).kind === "valid";
      const quickly = quick(trace);
      // Sound: a quick yes is always a protovalidate yes.
      if (!valid) expect({ trace, quickly }).toEqual({ trace, quickly: false });
      // Useful: a protovalidate yes is a quick yes, except where max_len would need code points
      // counted (astral characters beyond 256 UTF-16 units): those are left to protovalidate.
      if (valid && !quickly) {
        expect(trace.model).toBe("😀".repeat(129));
        seen.deferredValid++;
      }
      seen[valid ? "valid" : "invalid"]++;
    }
    expect(seen.valid).toBeGreaterThan(1000);
    expect(seen.invalid).toBeGreaterThan(1000);
    expect(seen.deferredValid).toBeGreaterThan(0);
  }, 120_000); // 70,000 traces through protovalidate: seconds alone, much longer on busy cores

  it("the message-level CEL rule counts: an error message with status success is not quickly valid", () => {
    const trace = create(TraceSchema, {
      provider: "openai",
      model: "m",
      tokensIn: 1,
      tokensOut: 1,
      latencyMs: 1,
      costUsd: 0,
      apiKey: "k",
      status: "success",
      error: "boom",
    });
    expect(quick(trace)).toBe(false);
    expect(quick(create(TraceSchema, { ...trace, status: "error" }))).toBe(true);
  });

  it("defers every time for a message with rule kinds it does not compile (string.email, min_len)", () => {
    const signUp = compileQuickValidity(SignUpRequestSchema);
    const request = create(SignUpRequestSchema, { email: "a@example.com", password: "correct horse battery staple" });
    expect(validator.validate(SignUpRequestSchema, request).kind).toBe("valid");
    expect(signUp(request)).toBe(false);
  });
});
