import { Code, createClient, type Transport } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { refusal } from "../support/rpc-refusal.js";
import { directUnaryOff, fastPathsOn } from "../support/fast-paths.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

let service: TestService;

const transports: [string, (baseUrl: string) => Transport][] = [
  ["gRPC over h2c", (baseUrl) => createGrpcTransport({ baseUrl })],
  ["Connect over HTTP/1.1", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
  ["Connect over h2c", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2" })],
  // The protobuf encoding is answered by the direct path (src/server/direct-unary.ts), JSON by connect-es.
  ["Connect (protobuf) over HTTP/1.1", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
  [
    "Connect (protobuf, gzip both ways) over h2c",
    (baseUrl) =>
      createConnectTransport({
        baseUrl,
        httpVersion: "2",
        useBinaryFormat: true,
        sendCompression: compressionGzip,
        acceptCompression: [compressionGzip],
        compressMinBytes: 1,
      }),
  ],
  [
    "gRPC (gzip both ways) over h2c",
    (baseUrl) =>
      createGrpcTransport({ baseUrl, sendCompression: compressionGzip, acceptCompression: [compressionGzip], compressMinBytes: 1 }),
  ],
  ["gRPC-Web over HTTP/1.1", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
];

function trace(apiKey: string, overrides: Record<string, unknown> = {}) {
  return {
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    tokensIn: 900,
    tokensOut: 120,
    latencyMs: 1500,
    costUsd: 0.0045,
    apiKey,
    status: "success",
    ...overrides,
  };
}

describe.each([fastPathsOn, directUnaryOff])("%s", (_switches, switches) => {
  beforeAll(async () => {
    service = await startTestService({
      ...switches,
      plans: { free: { per_minute: 5, per_month: 50_000 }, pro: { per_minute: 1000, per_month: 500_000 } },
    });
  });

  describe.each(transports)("TraceService.Ingest via %s on the REST port", (_name, makeTransport) => {
    it("stores a valid trace and answers ok with the rate-limit headers", async () => {
      const { key } = await service.createKey("pro");
      const client = createClient(TraceService, makeTransport(service.url));
      let headers: Headers | undefined;
      const response = await client.ingest(
        { trace: trace(key) },
        { headers: { authorization: `Bearer ${key}` }, onHeader: (h) => (headers = h) },
      );
      expect(response.status).toBe("ok");
      expect(headers?.get("x-ratelimit-limit")).toBe("1000");
      expect(headers?.get("x-ratelimit-remaining")).toBe("999");
      const stored = [];
      for await (const t of service.store.exportTraces({})) if (t.model === "claude-sonnet-4-5" && t.keyId) stored.push(t);
      expect(stored.length).toBeGreaterThan(0);
    });

    it("an invalid trace is INVALID_ARGUMENT with the REST details text (D17)", async () => {
      const { key } = await service.createKey("pro");
      const client = createClient(TraceService, makeTransport(service.url));
      const error = await refusal(
        client.ingest({ trace: trace(key, { provider: "cohere", tokensIn: -3 }) }, { headers: { authorization: `Bearer ${key}` } }),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe("provider: must be one of openai, anthropic, gemini; tokens_in: must be greater than or equal to 0");
      expect(error.metadata.get("x-ratelimit-limit")).toBe("1000");
    });

    it("an invalid trace carries a google.rpc.BadRequest with one field violation per field, beside the ErrorInfo", async () => {
      const { key } = await service.createKey("pro");
      const client = createClient(TraceService, makeTransport(service.url));
      const error = await refusal(
        client.ingest({ trace: trace(key, { provider: "cohere", tokensIn: -3 }) }, { headers: { authorization: `Bearer ${key}` } }),
      );
      const [badRequest] = error.findDetails(BadRequestSchema);
      expect(badRequest?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
        ["provider", "must be one of openai, anthropic, gemini"],
        ["tokens_in", "must be greater than or equal to 0"],
      ]);
      expect(error.findDetails(ErrorInfoSchema)[0]?.reason).toBe("VALIDATION_FAILED");
      const mismatch = await refusal(client.ingest({ trace: trace(`${key}x`) }, { headers: { authorization: `Bearer ${key}` } }));
      expect(mismatch.rawMessage).toBe("api_key does not match the API key in the Authorization header");
      expect(mismatch.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("api_key");
    });

    it("a request without a trace says 'trace: is required'", async () => {
      const { key } = await service.createKey("pro");
      const client = createClient(TraceService, makeTransport(service.url));
      const error = await refusal(client.ingest({}, { headers: { authorization: `Bearer ${key}` } }));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe("trace: is required");
      expect(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(["trace"]);
      expect(error.metadata.get("x-ratelimit-limit")).toBe("1000");
    });

    it("a replayed Idempotency-Key answers with the first answer's X-Quota-Remaining, even after other traces of the key (D14, D23)", async () => {
      const { key } = await service.createKey("pro");
      const client = createClient(TraceService, makeTransport(service.url));
      const remaining: (string | null)[] = [];
      const ingest = (idempotencyKey?: string) =>
        client.ingest(
          { trace: trace(key) },
          {
            headers: { authorization: `Bearer ${key}`, ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
            onHeader: (h) => remaining.push(h.get("x-quota-remaining")),
          },
        );
      await ingest("replayed-once");
      await ingest("replayed-once");
      // Other traces of the key are stored in between; the replay still answers the first figure.
      await ingest();
      await ingest("another");
      await ingest("replayed-once");
      // Replays stored nothing: the next trace is the fourth of the month.
      await ingest();
      expect(remaining).toEqual(["499999", "499999", "499998", "499997", "499999", "499996"]);
    });

    it("a bad or missing key is UNAUTHENTICATED with 'Invalid API key'", async () => {
      const client = createClient(TraceService, makeTransport(service.url));
      const missing = await refusal(client.ingest({ trace: trace("ct_x") }));
      expect(missing.code).toBe(Code.Unauthenticated);
      expect(missing.rawMessage).toBe("Invalid API key");
      const unknown = "ct_" + "Z".repeat(40);
      const bad = await refusal(client.ingest({ trace: trace(unknown) }, { headers: { authorization: `Bearer ${unknown}` } }));
      expect(bad.code).toBe(Code.Unauthenticated);
    });

    it("over the per-minute limit is RESOURCE_EXHAUSTED with a RetryInfo detail and the headers", async () => {
      const { key } = await service.createKey("free");
      const client = createClient(TraceService, makeTransport(service.url));
      for (let i = 0; i < 5; i++) await client.ingest({ trace: trace(key) }, { headers: { authorization: `Bearer ${key}` } });
      const error = await refusal(client.ingest({ trace: trace(key) }, { headers: { authorization: `Bearer ${key}` } }));
      expect(error.code).toBe(Code.ResourceExhausted);
      expect(error.rawMessage).toBe("Rate limit exceeded");
      const [retry] = error.findDetails(RetryInfoSchema);
      const seconds = Number(retry?.retryDelay?.seconds);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(60);
      expect(error.metadata.get("x-ratelimit-remaining")).toBe("0");
    });
  });

  describe("REST and RPC share one limiter and one store", () => {
    it("requests over REST and gRPC count against the same per-minute window", async () => {
      const { key } = await service.createKey("free");
      const client = createClient(TraceService, createGrpcTransport({ baseUrl: service.url }));
      for (let i = 0; i < 3; i++) expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
      await client.ingest({ trace: trace(key) }, { headers: { authorization: `Bearer ${key}` } });
      await client.ingest({ trace: trace(key) }, { headers: { authorization: `Bearer ${key}` } });
      expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(429);
    });
  });
});
