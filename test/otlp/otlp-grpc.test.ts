import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { toBinary } from "@bufbuild/protobuf";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceService as CalltraceTraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { ExportTraceServiceRequestSchema, TraceService } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { throwawayCertificate } from "../support/tls-certificate.js";
import { directUnaryOff, fastPathsOn, otlpReaderOff } from "../support/fast-paths.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { exportOf, genAiSpan, hex, storedOtlp } from "./otlp-support.js";

/** OTLP/gRPC: opentelemetry.proto.collector.trace.v1.TraceService/Export on the service's one port, h2c and TLS. */
let plain: TestService;
let tls: TestService;
let cert: Buffer;

const h2c = (service: TestService) => createClient(TraceService, createGrpcTransport({ baseUrl: service.url }));
const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

describe.each([fastPathsOn, directUnaryOff, otlpReaderOff])("%s", (_switches, switches) => {
  beforeAll(async () => {
    const certificate = throwawayCertificate();
    const { certFile, keyFile } = certificate;
    cert = certificate.cert;
    const plans = {
      free: { per_minute: 1, per_month: 1000 },
      metered: { per_minute: 1000, per_month: 2 },
      pro: { per_minute: 100_000, per_month: 1_000_000 },
    };
    plain = await startTestService({ ...switches, plans });
    tls = await startTestService({ ...switches, plans, tlsCertFile: certFile, tlsKeyFile: keyFile });
  });

  describe("OTLP/gRPC Export", () => {
    it("h2c: stores the calls and answers an empty ExportTraceServiceResponse, with the rate-limit and quota headers", async () => {
      const { key, accountId } = await plain.createKey("pro");
      const spans = [genAiSpan(), genAiSpan()];
      let headers: Headers | undefined;
      const response = await h2c(plain).export(exportOf(spans), { ...bearer(key), onHeader: (h) => (headers = h) });
      expect(response.partialSuccess).toBeUndefined();
      expect(headers?.get("x-ratelimit-limit")).toBe("100000");
      expect(headers?.get("x-quota-remaining")).toBe("999998");
      expect((await storedOtlp(plain.store, accountId)).map((t) => t.otlpSpanId).sort()).toEqual(spans.map((s) => hex(s.spanId)).sort());
    });

    it("TLS (HTTP/2 through ALPN): the same", async () => {
      const { key, accountId } = await tls.createKey("pro");
      const client = createClient(
        TraceService,
        createGrpcTransport({ baseUrl: `https://localhost:${tls.port}`, nodeOptions: { ca: cert } }),
      );
      const span = genAiSpan();
      expect((await client.export(exportOf([span]), bearer(key))).partialSuccess).toBeUndefined();
      expect((await storedOtlp(tls.store, accountId)).map((t) => t.otlpSpanId)).toEqual([hex(span.spanId)]);
    });

    it("partial_success names the rejected spans", async () => {
      const { key } = await plain.createKey("pro");
      const bad = genAiSpan({
        attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": "mistral_ai", "gen_ai.request.model": "m" },
      });
      const response = await h2c(plain).export(exportOf([bad, genAiSpan()]), bearer(key));
      expect(Number(response.partialSuccess?.rejectedSpans)).toBe(1);
      expect(response.partialSuccess?.errorMessage).toContain('provider "mistral_ai" is not supported');
    });

    it("no key: UNAUTHENTICATED", async () => {
      const error = await h2c(plain)
        .export(exportOf([genAiSpan()]))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    });

    it("over the per-minute limit, or with no quota left: RESOURCE_EXHAUSTED with RetryInfo", async () => {
      const { key: free } = await plain.createKey("free");
      await h2c(plain).export(exportOf([genAiSpan()]), bearer(free));
      const limited = (await h2c(plain)
        .export(exportOf([genAiSpan()]), bearer(free))
        .catch((e: unknown) => e)) as ConnectError;
      expect(limited.code).toBe(Code.ResourceExhausted);
      expect(limited.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBeGreaterThan(0n);

      const { key: metered } = await plain.createKey("metered");
      const partial = await h2c(plain).export(exportOf([genAiSpan(), genAiSpan(), genAiSpan()]), bearer(metered));
      expect(partial.partialSuccess?.errorMessage).toMatch(/: Monthly quota exceeded$/);
      const over = (await h2c(plain)
        .export(exportOf([genAiSpan()]), bearer(metered))
        .catch((e: unknown) => e)) as ConnectError;
      expect(over.code).toBe(Code.ResourceExhausted);
      expect(over.rawMessage).toBe("Monthly quota exceeded");
      expect(over.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds).toBeGreaterThan(0n);
    });

    it("a body that is not an ExportTraceServiceRequest: INVALID_ARGUMENT, not INTERNAL", async () => {
      const { key } = await plain.createKey("pro");
      const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 3]), Buffer.from([0x0a, 0x10, 0x01])]);
      const { connect } = await import("node:http2");
      const session = connect(plain.url);
      const { status, trailers } = await new Promise<{ status: string | undefined; trailers: Record<string, unknown> }>(
        (resolve, reject) => {
          const stream = session.request({
            ":method": "POST",
            ":path": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            "content-type": "application/grpc",
            te: "trailers",
            authorization: `Bearer ${key}`,
          });
          let grpcStatus: string | undefined;
          stream.on("response", (h) => (grpcStatus = h["grpc-status"] as string | undefined));
          stream.on("trailers", (t) => resolve({ status: (t["grpc-status"] as string | undefined) ?? grpcStatus, trailers: t }));
          stream.on("error", reject);
          stream.resume();
          stream.end(frame);
        },
      );
      session.close();
      expect(status, JSON.stringify(trailers)).toBe(String(Code.InvalidArgument));
    });
  });
});

describe("OTLP_MAX_BODY_BYTES over gRPC and Connect: an Export's own limit, calltrace's Ingest keeps MAX_BODY_BYTES", () => {
  let limited: TestService;
  const maxBodyBytes = 16_384;
  const otlpMaxBodyBytes = 65_536;

  beforeAll(async () => {
    limited = await startTestService({ maxBodyBytes, otlpMaxBodyBytes });
  });

  /** An Export of `count` calls whose prompts (content capture) make it large. */
  const batch = (count: number) =>
    exportOf(
      Array.from({ length: count }, () =>
        genAiSpan({
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.prompt": "p".repeat(2000),
          },
        }),
      ),
    );

  it.each([
    ["gRPC (h2c)", () => createGrpcTransport({ baseUrl: limited.url })],
    ["Connect (HTTP/1.1)", () => createConnectTransport({ baseUrl: limited.url, httpVersion: "1.1", useBinaryFormat: true })],
    ["Connect JSON (HTTP/1.1)", () => createConnectTransport({ baseUrl: limited.url, httpVersion: "1.1" })],
  ])("%s: an Export between the limits is stored; one over OTLP_MAX_BODY_BYTES is RESOURCE_EXHAUSTED", async (_name, transport) => {
    const { key, accountId } = await limited.createKey("pro");
    const client = createClient(TraceService, transport());
    const request = batch(20);
    expect(toBinary(ExportTraceServiceRequestSchema, request).length).toBeGreaterThan(maxBodyBytes);
    expect((await client.export(request, bearer(key))).partialSuccess).toBeUndefined();
    expect(await storedOtlp(limited.store, accountId)).toHaveLength(20);
    const over = (await client.export(batch(40), bearer(key)).catch((e: unknown) => e)) as ConnectError;
    expect(over).toBeInstanceOf(ConnectError);
    expect(over.code).toBe(Code.ResourceExhausted);
    expect(await storedOtlp(limited.store, accountId)).toHaveLength(20);
  });

  it("calltrace.v1.TraceService/Ingest keeps MAX_BODY_BYTES", async () => {
    const { key } = await limited.createKey("pro");
    const ingest = createClient(CalltraceTraceService, createGrpcTransport({ baseUrl: limited.url }));
    const trace = {
      provider: "openai",
      model: "gpt-4o-mini",
      tokensIn: 1,
      tokensOut: 1,
      latencyMs: 1,
      apiKey: key,
      status: "error",
      error: "e".repeat(4096),
    };
    const big = { trace: { ...trace, metadata: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, "v".repeat(512)])) } };
    const error = (await ingest.ingest(big, bearer(key)).catch((e: unknown) => e)) as ConnectError;
    expect(error).toBeInstanceOf(ConnectError);
    expect(error.code).toBe(Code.ResourceExhausted);
  });
});
