import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { openApiDocument, openApiJson } from "../../src/openapi/openapi-document.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { conformanceChecker } from "./conformance.js";

// The OpenAPI document is derived from the contract, kept in docs/openapi.json, served at
// /openapi.json, and every status it documents is checked here against real responses
// (schemathesis then fuzzes it in test/hardening/schemathesis.test.ts).
const doc = openApiDocument() as Parameters<typeof conformanceChecker>[0];
const expectConforms = conformanceChecker(doc);
let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startTestService({
    maxBodyBytes: 4096,
    plans: {
      free: { per_minute: 2, per_month: 1000 },
      tiny: { per_minute: 1000, per_month: 1 },
      pro: { per_minute: 100_000, per_month: 1_000_000 },
    },
  });
  key = (await service.createKey("pro")).key;
});

describe("the OpenAPI document", () => {
  it("is the one kept in docs/openapi.json (run `npm run docs:openapi` after changing the contract)", () => {
    expect(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")).toBe(openApiJson());
  });

  it("is served at GET /openapi.json", async () => {
    const response = await fetch(`${service.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(openApiJson());
  });

  it("derives the Trace schema from the contract: every field, its JSON name and its rules", () => {
    const trace = (
      doc as unknown as { components: { schemas: { Trace: { properties: Record<string, Record<string, unknown>>; required: string[] } } } }
    ).components.schemas.Trace;
    expect(Object.keys(trace.properties)).toEqual(TraceSchema.fields.map((f) => f.jsonName));
    expect(trace.required).toEqual(["provider", "model", "tokens_in", "tokens_out", "latency_ms", "cost_usd", "api_key", "status"]);
    expect(trace.properties.provider).toMatchObject({ type: "string", enum: ["openai", "anthropic", "gemini"], minLength: 1 });
    expect(trace.properties.model).toMatchObject({ type: "string", minLength: 1, maxLength: 256 });
    expect(trace.properties.tokens_in).toMatchObject({ type: "integer", minimum: 0, maximum: 2147483647 });
    expect(trace.properties.cost_usd).toMatchObject({ type: "number", minimum: 0 });
    expect(trace.properties.error).toMatchObject({ type: ["string", "null"], maxLength: 4096 });
  });
});

describe("every documented response is what the service answers", () => {
  const post = (body: unknown, options: Parameters<typeof postTrace>[2] = {}) => postTrace(service.url, body, options);

  it("202 with the rate-limit headers", async () => {
    await expectConforms("POST", "/v1/traces", await post(traceBody(key), { key, headers: { "idempotency-key": "abc" } }));
  });

  it("400 for invalid bodies, malformed JSON, a key mismatch and a bad Idempotency-Key", async () => {
    for (const response of [
      await post(traceBody(key, { provider: "cohere", tokens_in: -1 }), { key }),
      await post(null, { key, raw: "{not json" }),
      await post(null, { key, raw: "" }),
      await post([1, 2], { key }),
      await post(traceBody("ct_other"), { key }),
      await post(traceBody(key), { key, headers: { "idempotency-key": "x".repeat(129) } }),
      await post(traceBody(key, { status: "success", error: "no" }), { key }),
    ]) {
      expect(response.status).toBe(400);
      await expectConforms("POST", "/v1/traces", response);
    }
  });

  it("401 for a missing or unknown key", async () => {
    for (const response of [await post(traceBody(key)), await post(traceBody(key), { key: "ct_unknownkeyunknownkeyunknownkey000" })]) {
      expect(response.status).toBe(401);
      await expectConforms("POST", "/v1/traces", response);
    }
  });

  it("413 and 415", async () => {
    const big = await post(traceBody(key, { model: "m".repeat(5000) }), { key });
    expect(big.status).toBe(413);
    await expectConforms("POST", "/v1/traces", big);
    const text = await post(traceBody(key), { key, headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
    await expectConforms("POST", "/v1/traces", text);
  });

  it("429 for the per-minute limit, the monthly quota and failed authentications", async () => {
    const { key: free } = await service.createKey("free");
    await post(traceBody(free), { key: free });
    await post(traceBody(free), { key: free });
    const limited = await post(traceBody(free), { key: free });
    expect(limited.status).toBe(429);
    expect(await expectConforms("POST", "/v1/traces", limited)).toMatchObject({ error: "Rate limit exceeded" });

    const { key: tiny } = await service.createKey("tiny");
    expect((await post(traceBody(tiny), { key: tiny })).status).toBe(202);
    const quota = await post(traceBody(tiny), { key: tiny });
    expect(quota.status).toBe(429);
    expect(await expectConforms("POST", "/v1/traces", quota)).toMatchObject({ error: "Monthly quota exceeded" });

    let last: Response | undefined;
    for (let i = 0; i < 40 && last?.status !== 429; i++) last = await post(traceBody("x"), { key: `ct_wrong${i}` });
    expect(last?.status).toBe(429);
    await expectConforms("POST", "/v1/traces", last!);
  });

  it("431, with a JSON body, for a URL or a header over Node's header limit, on every route that takes input", async () => {
    // Node refuses these before any route or key is looked at (schemathesis found one undocumented).
    const long = encodeURIComponent("\u{1F600}".repeat(1500)); // 18,000 bytes once percent-encoded
    for (const [method, path, init] of [
      ["GET", "/v1/traces", { url: `/v1/traces?q=${long}` }],
      ["GET", "/v1/metrics", { url: `/v1/metrics?model=${long}` }],
      ["GET", "/v1/runs/{id}", { url: `/v1/runs/session%3A${long}` }],
      ["POST", "/v1/traces", { url: "/v1/traces", headers: { "idempotency-key": "k".repeat(17_000) } }],
      ["GET", "/v1/budget", { url: "/v1/budget", headers: { authorization: `Bearer ${"k".repeat(17_000)}` } }],
    ] as const) {
      const response = await fetch(`${service.url}${init.url}`, {
        method,
        headers: "headers" in init ? init.headers : {},
        ...(method === "POST" ? { body: JSON.stringify(traceBody(key)) } : {}),
      });
      expect(response.status, `${method} ${init.url.slice(0, 20)}`).toBe(431);
      expect(await expectConforms(method, path, response)).toMatchObject({ details: "The request line and headers exceed 16384 bytes." });
    }
    await expectConforms("POST", "/v1/traces", await post(traceBody(key), { key }));
  });

  it("health, readiness and the document itself", async () => {
    await expectConforms("GET", "/healthz", await fetch(`${service.url}/healthz`));
    await expectConforms("GET", "/readyz", await fetch(`${service.url}/readyz`));
    await expectConforms("GET", "/openapi.json", await fetch(`${service.url}/openapi.json`));
  });

  it("405 with Allow for methods the document does not list", async () => {
    for (const [method, path, allow] of [
      ["DELETE", "/v1/traces", "GET, POST"],
      ["PUT", "/v1/traces", "GET, POST"],
      ["POST", "/v1/metrics", "GET"],
      ["POST", "/healthz", "GET, HEAD"],
      ["DELETE", "/readyz", "GET, HEAD"],
      ["PATCH", "/openapi.json", "GET, HEAD"],
    ] as const) {
      const response = await fetch(`${service.url}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get("allow")).toBe(allow);
    }
  });
});

describe("503 when the store cannot take the write", () => {
  it("is documented as served", async () => {
    const full = await startTestService({ writerMaxQueue: 0 });
    const { key: k } = await full.createKey("pro");
    const response = await postTrace(full.url, traceBody(k), { key: k });
    expect(response.status).toBe(503);
    await expectConforms("POST", "/v1/traces", response);
  });
});
