import { request as httpRequest } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startTestService({
    maxBodyBytes: 8192,
    plans: { free: { per_minute: 100, per_month: 50_000 }, internal: { per_minute: 1_000_000, per_month: 1_000_000_000 } },
  });
  key = (await service.createKey("internal")).key;
});

async function storedCount(): Promise<number> {
  let n = 0;
  for await (const _ of service.store.exportTraces({})) n++;
  return n;
}

async function expectValidationError(response: Response, details: string | RegExp): Promise<void> {
  expect(response.status).toBe(400);
  const body = (await response.json()) as { error: string; details: string };
  expect(Object.keys(body).sort()).toEqual(["details", "error"]);
  expect(body.error).toBe("Validation error");
  if (typeof details === "string") expect(body.details).toBe(details);
  else expect(body.details).toMatch(details);
}

describe("POST /v1/traces accepts a valid trace", () => {
  it("answers 202 {status: ok} with the D10 rate-limit headers, and stores the trace without its key", async () => {
    const before = await storedCount();
    const response = await postTrace(service.url, traceBody(key, { status: "error", error: "upstream 529" }), { key });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ status: "ok" });
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-ratelimit-limit")).toBe("1000000");
    expect(Number(response.headers.get("x-ratelimit-remaining"))).toBeLessThan(1_000_000);
    const reset = Number(response.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
    expect(await storedCount()).toBe(before + 1);
    const traces = [];
    for await (const t of service.store.exportTraces({})) traces.push(t);
    const last = traces.at(-1)!;
    expect(last).toMatchObject({
      provider: "openai",
      model: "gpt-4o-2024-08-06",
      tokensIn: 1200,
      tokensOut: 350,
      latencyMs: 842,
      costUsd: 0.0065,
      status: "error",
      error: "upstream 529",
    });
    expect(JSON.stringify(last, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(key);
  });

  it("stores the optional cache, reasoning and attribution fields as sent, and marks the trace as the API's", async () => {
    const optional = {
      tokens_cached_in: 1000,
      tokens_cache_write: 100,
      tokens_reasoning: 50,
      user_id: "customer-42",
      session_id: "conv-7",
      tags: ["checkout", "summarise"],
      metadata: { team: "payments", "feature.flag": "on" },
      environment: "staging",
      ttft_ms: 120,
      service_tier: "flex",
      tokens_cache_write_1h: 60,
      tokens_audio_in: 30,
      tokens_audio_out: 20,
      web_search_requests: 2,
    };
    const response = await postTrace(service.url, traceBody(key, { model: "attribution-model", ...optional }), { key });
    expect(response.status).toBe(202);
    const traces = [];
    for await (const t of service.store.exportTraces({})) traces.push(t);
    const stored = traces.find((t) => t.model === "attribution-model")!;
    expect(stored).toMatchObject({
      tokensCachedIn: 1000,
      tokensCacheWrite: 100,
      tokensReasoning: 50,
      userId: "customer-42",
      sessionId: "conv-7",
      tags: ["checkout", "summarise"],
      metadata: { team: "payments", "feature.flag": "on" },
      environment: "staging",
      ttftMs: 120,
      serviceTier: "flex",
      tokensCacheWrite1h: 60,
      tokensAudioIn: 30,
      tokensAudioOut: 20,
      webSearchRequests: 2,
      source: TraceSource.API,
      otlpTraceId: "",
    });
  });

  it("ignores unknown fields (D4) and accepts a charset parameter (D8)", async () => {
    const response = await postTrace(service.url, traceBody(key, { sdk_version: "9.9", nested: { a: [1] } }), {
      key,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(response.status).toBe(202);
  });

  it("accepts status error without an error message (D6) and the integer limits 0 and 2147483647", async () => {
    expect((await postTrace(service.url, traceBody(key, { status: "error" }), { key })).status).toBe(202);
    const extremes = traceBody(key, { tokens_in: 0, tokens_out: 2147483647, latency_ms: 0, cost_usd: 0 });
    expect((await postTrace(service.url, extremes, { key })).status).toBe(202);
  });
});

describe("POST /v1/traces rejects invalid bodies with 400 naming every offending field (D5-D7)", () => {
  const required = ["provider", "model", "tokens_in", "tokens_out", "latency_ms", "cost_usd", "api_key", "status"];
  for (const field of required) {
    it(`missing ${field} is "${field}: is required"`, async () => {
      const before = await storedCount();
      await expectValidationError(await postTrace(service.url, traceBody(key, { [field]: undefined }), { key }), `${field}: is required`);
      expect(await storedCount()).toBe(before);
    });
    it(`${field}: null counts as missing`, async () => {
      await expectValidationError(await postTrace(service.url, traceBody(key, { [field]: null }), { key }), `${field}: is required`);
    });
  }

  const violations: [string, Record<string, unknown>, string][] = [
    ["tokens_in as a string", { tokens_in: "12" }, "tokens_in: must be an integer from 0 to 2147483647"],
    ["tokens_out as a fraction", { tokens_out: 1.5 }, "tokens_out: must be an integer from 0 to 2147483647"],
    ["latency_ms above int32", { latency_ms: 2147483648 }, "latency_ms: must be an integer from 0 to 2147483647"],
    ["tokens_in negative", { tokens_in: -1 }, "tokens_in: must be greater than or equal to 0"],
    ["cost_usd negative", { cost_usd: -0.01 }, "cost_usd: must be greater than or equal to 0"],
    ["cost_usd as a string", { cost_usd: "0.1" }, "cost_usd: must be a number"],
    ["provider unknown", { provider: "mistral" }, "provider: must be one of openai, anthropic, gemini"],
    ["provider as a number", { provider: 1 }, "provider: must be a string"],
    ["status unknown", { status: "ok" }, "status: must be one of success, error"],
    ["model empty", { model: "" }, "model: is required"],
    ["model of 257 characters", { model: "m".repeat(257) }, "model: must be at most 256 characters"],
    ["error of 4097 characters", { status: "error", error: "e".repeat(4097) }, "error: must be at most 4096 characters"],
    ["error with status success", { error: "boom" }, "error: must be omitted when status is success"],
    ["api_key as an object", { api_key: { k: 1 } }, "api_key: must be a string"],
    ["tokens_cached_in negative", { tokens_cached_in: -1 }, "tokens_cached_in: must be greater than or equal to 0"],
    ["tokens_cache_write as a string", { tokens_cache_write: "5" }, "tokens_cache_write: must be an integer from 0 to 2147483647"],
    [
      "cached and cache-write tokens beyond tokens_in",
      { tokens_in: 100, tokens_cached_in: 80, tokens_cache_write: 21 },
      "tokens_cached_in: together with tokens_cache_write must not exceed tokens_in",
    ],
    ["reasoning tokens beyond tokens_out", { tokens_out: 10, tokens_reasoning: 11 }, "tokens_reasoning: must not exceed tokens_out"],
    ["user_id of 257 characters", { user_id: "u".repeat(257) }, "user_id: must be at most 256 characters"],
    ["tags not an array", { tags: "a,b" }, "tags: must be an array of strings"],
    ["a tag of 65 characters", { tags: ["ok", "t".repeat(65)] }, "tags[1]: must be at most 64 characters"],
    ["21 tags", { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, "tags: must contain no more than 20 item(s)"],
    ["metadata with a number value", { metadata: { n: 1 } }, "metadata: must be an object of strings"],
    [
      "a metadata key with a space",
      { metadata: { "bad key": "x" } },
      'metadata["bad key"]: key does not match regex pattern `^[A-Za-z0-9_.-]+$`',
    ],
    ["a metadata value of 513 characters", { metadata: { team: "v".repeat(513) } }, 'metadata["team"]: must be at most 512 characters'],
    ["environment of 65 characters", { environment: "e".repeat(65) }, "environment: must be at most 64 characters"],
    ["ttft_ms beyond latency_ms", { latency_ms: 100, ttft_ms: 101 }, "ttft_ms: must not exceed latency_ms"],
    ["service_tier unknown", { service_tier: "scale" }, "service_tier: must be one of standard, batch, flex, priority"],
    [
      "1-hour cache writes beyond tokens_cache_write",
      { tokens_cache_write: 10, tokens_cache_write_1h: 11 },
      "tokens_cache_write_1h: must not exceed tokens_cache_write",
    ],
    ["1-hour cache writes without tokens_cache_write", { tokens_cache_write_1h: 1 }, "tokens_cache_write_1h: must not exceed tokens_cache_write"],
    [
      "audio input beyond the uncached input",
      { tokens_in: 100, tokens_cached_in: 50, tokens_audio_in: 51 },
      "tokens_audio_in: must not exceed tokens_in less tokens_cached_in and tokens_cache_write",
    ],
    ["audio output beyond tokens_out", { tokens_out: 10, tokens_audio_out: 11 }, "tokens_audio_out: must not exceed tokens_out"],
    ["web_search_requests negative", { web_search_requests: -1 }, "web_search_requests: must be greater than or equal to 0"],
  ];
  for (const [name, overrides, details] of violations) {
    it(`${name} → "${details}"`, async () => {
      await expectValidationError(await postTrace(service.url, traceBody(key, overrides), { key }), details);
    });
  }

  it("names several offending fields in one details string, in contract order", async () => {
    const body = traceBody(key, { provider: "x", tokens_in: -5, cost_usd: "free", status: undefined });
    await expectValidationError(
      await postTrace(service.url, body, { key }),
      "provider: must be one of openai, anthropic, gemini; tokens_in: must be greater than or equal to 0; cost_usd: must be a number; status: is required",
    );
  });

  it("a model of 256 multi-byte characters is within the limit (characters, not bytes)", async () => {
    expect((await postTrace(service.url, traceBody(key, { model: "é".repeat(256) }), { key })).status).toBe(202);
  });

  const malformed: [string, string, string | RegExp][] = [
    ["malformed JSON", '{"provider": "openai",', /^request body is not valid JSON/],
    ["an empty body", "", "request body is empty"],
    ["a JSON array", JSON.stringify([traceBody("ct_x")]), "request body must be a JSON object"],
    ["a JSON string", '"hello"', "request body must be a JSON object"],
    ["JSON null", "null", "request body must be a JSON object"],
  ];
  for (const [name, raw, details] of malformed) {
    it(`${name} is 400`, async () => {
      await expectValidationError(await postTrace(service.url, undefined, { key, raw }), details);
    });
  }

  it("bytes that are not UTF-8 are 400", async () => {
    const raw = Buffer.concat([Buffer.from('{"model":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    await expectValidationError(await postTrace(service.url, undefined, { key, raw }), "request body is not valid UTF-8");
  });

  it("a UTF-8 byte order mark before the JSON is ignored (RFC 8259 allows it)", async () => {
    const raw = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(traceBody(key)))]);
    const response = await postTrace(service.url, undefined, { key, raw });
    expect(response.status).toBe(202);
  });

  it("a body api_key that differs from the header key is 400 (D3)", async () => {
    const other = (await service.createKey("internal")).key;
    await expectValidationError(
      await postTrace(service.url, traceBody(other), { key }),
      "api_key does not match the API key in the Authorization header",
    );
  });

  it("an Idempotency-Key over 128 characters is 400", async () => {
    const response = await postTrace(service.url, traceBody(key), { key, headers: { "idempotency-key": "k".repeat(129) } });
    await expectValidationError(response, "Idempotency-Key: must be 1 to 128 characters");
  });

  it("rate-limit headers are on 400 responses too (D10)", async () => {
    const response = await postTrace(service.url, {}, { key });
    expect(response.status).toBe(400);
    expect(response.headers.get("x-ratelimit-limit")).toBe("1000000");
  });
});

describe("POST /v1/traces content type and size (D8, D9)", () => {
  it("another content type is 415", async () => {
    const response = await postTrace(service.url, traceBody(key), { key, headers: { "content-type": "text/plain" } });
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual({
      error: "Unsupported media type",
      details: 'Content-Type must be application/json, got "text/plain"',
    });
    expect(response.headers.get("x-ratelimit-limit")).toBe("1000000");
  });

  it("a body over the limit is 413 (announced length)", async () => {
    const response = await postTrace(service.url, traceBody(key, { model: "m".repeat(9000) }), { key });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ error: "Payload too large", details: "request body exceeds the limit of 8192 bytes" });
  });

  it("a chunked body over the limit is 413, and the server stops reading it", async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${service.url}/v1/traces`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on("error", reject);
      // Keep sending well past the limit; the answer must come without the body ever ending.
      let sent = 0;
      const pump = () => {
        while (sent < 64 * 1024 && req.write("x".repeat(1024))) sent += 1024;
        if (sent < 64 * 1024) req.once("drain", pump);
      };
      pump();
    });
    expect(status).toBe(413);
    expect(JSON.parse(body)).toEqual({ error: "Payload too large", details: "request body exceeds the limit of 8192 bytes" });
  });

  it("a body over the limit with a wrong content type is 413, not 415 (D1 order)", async () => {
    const response = await postTrace(service.url, undefined, { key, raw: "x".repeat(9000), headers: { "content-type": "text/plain" } });
    expect(response.status).toBe(413);
  });
});

describe("POST /v1/traces authentication (D2)", () => {
  const unauthorized = { error: "Unauthorized", message: "Invalid API key" };
  async function expect401(response: Response) {
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual(unauthorized);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(response.headers.get("x-ratelimit-limit")).toBeNull();
  }

  it("a missing Authorization header is 401", async () => {
    await expect401(await postTrace(service.url, traceBody(key)));
  });
  it("a scheme other than Bearer is 401", async () => {
    await expect401(await postTrace(service.url, traceBody(key), { headers: { authorization: `Basic ${key}` } }));
  });
  it("a key without the ct_ prefix is 401", async () => {
    await expect401(await postTrace(service.url, traceBody("sk_" + key.slice(3)), { key: "sk_" + key.slice(3) }));
  });
  it("a well-formed but unknown key is 401", async () => {
    const unknown = "ct_" + "A".repeat(40);
    await expect401(await postTrace(service.url, traceBody(unknown), { key: unknown }));
  });
  it("a revoked key is 401 within 5 seconds of revocation (D20)", async () => {
    const { key: doomed, id } = await service.createKey("free");
    expect((await postTrace(service.url, traceBody(doomed), { key: doomed })).status).toBe(202);
    await service.store.keys.revokeKey(id);
    const deadline = Date.now() + 5000;
    let status = 202;
    while (Date.now() < deadline && status === 202) {
      status = (await postTrace(service.url, traceBody(doomed), { key: doomed })).status;
      if (status === 202) await new Promise((r) => setTimeout(r, 200));
    }
    await expect401(await postTrace(service.url, traceBody(doomed), { key: doomed }));
  });
  it("authentication comes before the body: a bad key with an oversized body is 401 (D1)", async () => {
    await expect401(await postTrace(service.url, undefined, { key: "ct_nope", raw: "x".repeat(20_000) }));
  });
});

describe("per-key rate limit (D10, D19)", () => {
  it("the 101st request in a minute from a free key is 429 with retry_after and Retry-After", async () => {
    const { key: free } = await service.createKey("free");
    const statuses: number[] = [];
    let remaining: string | null = null;
    for (let i = 0; i < 100; i++) {
      const response = await postTrace(service.url, traceBody(free), { key: free });
      statuses.push(response.status);
      remaining = response.headers.get("x-ratelimit-remaining");
    }
    expect(statuses.every((s) => s === 202)).toBe(true);
    expect(remaining).toBe("0");
    const limited = await postTrace(service.url, traceBody(free), { key: free });
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as { error: string; retry_after: number };
    expect(Object.keys(body).sort()).toEqual(["error", "retry_after"]);
    expect(body.error).toBe("Rate limit exceeded");
    expect(Number.isInteger(body.retry_after)).toBe(true);
    expect(body.retry_after).toBeGreaterThanOrEqual(1);
    expect(body.retry_after).toBeLessThanOrEqual(60);
    expect(limited.headers.get("retry-after")).toBe(String(body.retry_after));
    expect(limited.headers.get("x-ratelimit-limit")).toBe("100");
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    // Invalid requests count too (D1: every authenticated request counts).
    expect((await postTrace(service.url, {}, { key: free })).status).toBe(429);
  });
});

describe("Idempotency-Key (D14)", () => {
  it("a retry with the same Idempotency-Key answers 202 and stores nothing new", async () => {
    const headers = { "idempotency-key": "retry-test-7f3a" };
    const before = await storedCount();
    expect((await postTrace(service.url, traceBody(key), { key, headers })).status).toBe(202);
    expect((await postTrace(service.url, traceBody(key), { key, headers })).status).toBe(202);
    expect(await storedCount()).toBe(before + 1);
  });
  it("concurrent requests with one Idempotency-Key store exactly one trace", async () => {
    const headers = { "idempotency-key": "concurrent-test-91c" };
    const before = await storedCount();
    const responses = await Promise.all(Array.from({ length: 20 }, () => postTrace(service.url, traceBody(key), { key, headers })));
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(202));
    expect(await storedCount()).toBe(before + 1);
  });
});

describe("other paths and methods (D15)", () => {
  it("an unknown path is 404 {error: Not found}", async () => {
    const response = await fetch(`${service.url}/v2/traces`, { method: "POST" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: "Not found" });
  });
  it("PUT /v1/traces is 405 with Allow: GET, POST (GET is the read API)", async () => {
    const response = await fetch(`${service.url}/v1/traces`, { method: "PUT" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, POST");
  });
  it("GET /healthz and /readyz answer 200", async () => {
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });
});
