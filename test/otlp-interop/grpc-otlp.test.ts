import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { credentials, Client, Metadata, status as GrpcStatus, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ExportTraceServiceResponseSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { chatSpan, otlpProtobuf, storedFor, withIds } from "./interop.js";

// OTLP/gRPC's TraceService/Export on the service's port, called with grpc-js (the gRPC library the
// OpenTelemetry JS exporter is built on) as raw bytes, so a test can send what no exporter would:
// a retried Export, one the monthly quota only partly holds, malformed protobuf, no key.

const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

let service: TestService;
let grpc: Client;

beforeAll(async () => {
  service = await startTestService({ plans: { free: { per_minute: 1000, per_month: 50_000 }, tiny: { per_minute: 1000, per_month: 3 } } });
  grpc = new Client(new URL(service.url).host, credentials.createInsecure());
});

afterAll(() => grpc?.close());

type Answer = { ok: true; rejected: number; message: string } | { ok: false; error: ServiceError };

function callExport(body: Uint8Array, key?: string): Promise<Answer> {
  const metadata = new Metadata();
  if (key) metadata.set("authorization", `Bearer ${key}`);
  return new Promise((resolve) => {
    grpc.makeUnaryRequest(
      exportMethod,
      (bytes: Uint8Array) => Buffer.from(bytes),
      (bytes: Buffer) => bytes,
      body,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error, answer) => {
        if (error) return resolve({ ok: false, error });
        const response = fromBinary(ExportTraceServiceResponseSchema, answer!);
        resolve({
          ok: true,
          rejected: Number(response.partialSuccess?.rejectedSpans ?? 0n),
          message: response.partialSuccess?.errorMessage ?? "",
        });
      },
    );
  });
}

describe("OTLP/gRPC Export through grpc-js", () => {
  it("stores the GenAI spans of an Export, and nothing twice when the Export is retried", async () => {
    const { key, accountId } = await service.createKey();
    const spans = withIds([chatSpan("openai", "gpt-4o", 100, 20), chatSpan("anthropic", "claude-haiku-4-5", 300, 40)]);
    const body = otlpProtobuf(spans, "grpc-app");
    for (let attempt = 0; attempt < 3; attempt++) expect(await callExport(body, key)).toEqual({ ok: true, rejected: 0, message: "" });
    const stored = await storedFor(service, accountId);
    expect(stored.map((t) => t.otlpSpanId).sort()).toEqual(spans.map((s) => s.spanId).sort());
    expect(stored.map((t) => t.serviceName)).toEqual(["grpc-app", "grpc-app"]);
  });

  it("stores what the monthly quota holds, reports the rest in partial_success, then RESOURCE_EXHAUSTED with RetryInfo", async () => {
    const { key, accountId } = await service.createKey("tiny"); // 3 traces a month
    const partial = await callExport(
      otlpProtobuf(withIds([1, 2, 3, 4, 5].map((n) => chatSpan("gemini", "gemini-2.5-flash", n * 10, n)))),
      key,
    );
    expect(partial).toMatchObject({ ok: true, rejected: 2 });
    expect(partial.ok && partial.message).toMatch(/quota/i);
    expect(await storedFor(service, accountId)).toHaveLength(3);

    const refused = await callExport(otlpProtobuf(withIds([chatSpan("gemini", "gemini-2.5-flash", 1, 1)])), key);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    // The OTLP exporters read the delay from google.rpc.RetryInfo in grpc-status-details-bin.
    const [details] = refused.error.metadata.get("grpc-status-details-bin") as Buffer[];
    expect(details, "grpc-status-details-bin trailer").toBeDefined();
    const retryInfo = fromBinary(StatusSchema, details!)
      .details.map((any) => anyUnpack(any, RetryInfoSchema))
      .find((info) => info !== undefined);
    expect(retryInfo, "a RetryInfo detail").toBeDefined();
    expect(Number(retryInfo?.retryDelay?.seconds ?? 0n)).toBeGreaterThan(0);
    expect(await storedFor(service, accountId)).toHaveLength(3);
  });

  const malformed: [string, Uint8Array][] = [
    ["a length that runs past the end", Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01])],
    ["a wire type protobuf does not have", Uint8Array.from([0x0f, 0x01, 0x02])],
    ["a truncated Export", otlpProtobuf(withIds([chatSpan("openai", "gpt-4o", 1, 1)])).slice(0, 40)],
  ];
  for (const [what, body] of malformed) {
    it(`answers malformed protobuf (${what}) with INVALID_ARGUMENT, never INTERNAL or UNKNOWN`, async () => {
      const { key, accountId } = await service.createKey();
      const answer = await callExport(body, key);
      expect(answer.ok).toBe(false);
      if (!answer.ok) {
        expect(answer.error.code, answer.error.details).toBe(GrpcStatus.INVALID_ARGUMENT);
        expect(answer.error.details).not.toBe("");
      }
      expect(await storedFor(service, accountId)).toEqual([]);
    });
  }

  it("answers an Export without a key with UNAUTHENTICATED", async () => {
    const answer = await callExport(otlpProtobuf(withIds([chatSpan("openai", "gpt-4o", 1, 1)])));
    expect(answer.ok ? "OK" : answer.error.code).toBe(GrpcStatus.UNAUTHENTICATED);
  });
});
