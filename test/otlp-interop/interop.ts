import { create, fromJson, toBinary } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ListTracesResponseSchema } from "../../gen/calltrace/v1/query_service_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { ExportTraceServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AnyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { Span_SpanKind } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { repoRoot } from "../support/cli.js";
import { runProcess } from "../support/run-process.js";
import { tempDir } from "../support/temp-dir.js";
import type { TestService } from "../support/test-service.js";

// Shared by the OTLP interop tests: the Python environment of the instrumented app, the price
// table read on its own (not through the service's code), and the dashboard as a user sees it.

/**
 * The Python of an OTLP interop venv (.venv-otlp/ by default), which `npm test` makes
 * (scripts/install-test-deps.sh); a clear failure when it is missing.
 */
export function otlpPython(venv = ".venv-otlp", requirements = "test/otlp-interop/requirements.txt"): string {
  const python = join(repoRoot, venv, "bin/python");
  if (!existsSync(python)) {
    throw new Error(
      `the OTLP interop tests need ${join(repoRoot, venv)} with the pinned OpenTelemetry packages; \`npm test\` makes it, or run: ` +
        `python3 -m venv ${venv} && ${venv}/bin/pip install -r ${requirements}`,
    );
  }
  return python;
}

/** Token counts of one call; cached input and cache writes are parts of tokensIn (the contract's rule). */
export interface Usage {
  tokensIn: number;
  tokensOut: number;
  tokensCachedIn?: number;
  tokensCacheWrite?: number;
}

interface Rates {
  input: number;
  cached_input: number;
  cache_write: number;
  output: number;
  tiers?: ({ above_input_tokens: number } & Rates)[];
}

const table = JSON.parse(readFileSync(join(repoRoot, "sdk/pricing/models.json"), "utf8")) as {
  models: Record<string, Record<string, Rates>>;
};

/**
 * What the dated price table says the call costs, for the table's own `key` (so the service's
 * resolution of a dated snapshot name is checked too), by the formula of sdk/pricing/README.md in
 * its exact order, so the service's figure must equal it bit for bit.
 */
export function tableCost(provider: string, key: string, usage: Usage): number {
  const entry = table.models[provider]?.[key];
  if (!entry) throw new Error(`sdk/pricing/models.json has no ${provider} ${key}`);
  const tier = (entry.tiers ?? [])
    .filter((t) => t.above_input_tokens < usage.tokensIn)
    .sort((a, b) => b.above_input_tokens - a.above_input_tokens)[0];
  const r = tier ?? entry;
  const cached = usage.tokensCachedIn ?? 0;
  const written = usage.tokensCacheWrite ?? 0;
  const uncached = Math.max(0, usage.tokensIn - cached - written);
  return (uncached * r.input + cached * r.cached_input + written * r.cache_write + usage.tokensOut * r.output) / 1e6;
}

/** A dashboard user (signed up as a user would) and an API key made for it in the dashboard. */
export async function dashboardUser(service: TestService, email: string): Promise<{ client: DashboardClient; key: string }> {
  const client = new DashboardClient(service.url);
  await client.signUp(email);
  const created = await client.ok("AccountService/CreateKey", { name: "otel app" });
  return { client, key: created.plaintext as string };
}

/** Every trace the dashboard lists for the signed-in user (QueryService/ListTraces), newest first. */
export async function dashboardTraces(client: DashboardClient): Promise<StoredTrace[]> {
  const traces: StoredTrace[] = [];
  let cursor = "";
  do {
    const body = await client.ok("QueryService/ListTraces", { pageSize: 500, cursor });
    const page = fromJson(ListTracesResponseSchema, body).page;
    traces.push(...(page?.traces ?? []));
    cursor = page?.nextCursor ?? "";
  } while (cursor);
  return traces;
}

/**
 * The environment of an instrumented app as its user would set it: the endpoint and the key, plus
 * any `settings`; nothing else from this process's environment configures the exporter.
 */
export function otelEnvironment(service: TestService, key: string, settings: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    // An http:// endpoint is all a gRPC exporter needs to speak h2c.
    OTEL_EXPORTER_OTLP_ENDPOINT: service.url,
    OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${key}`,
    ...settings,
  };
  for (const name of Object.keys(process.env)) if (name.startsWith("OTEL_") && !(name in env)) env[name] = undefined;
  return env;
}

/** Every trace the store holds for an account, oldest first. */
export async function storedFor(service: TestService, accountId: string): Promise<StoredTrace[]> {
  const traces: StoredTrace[] = [];
  for await (const trace of service.store.exportTraces({ accountId })) traces.push(trace);
  return traces;
}

/** A span's duration in milliseconds, from its nanosecond times. */
export function spanMs(startNs: number, endNs: number): number {
  return (endNs - startNs) / 1e6;
}

/** A span as a test describes it; `otlpJson` and `otlpProtobuf` encode the same Export both ways. */
export interface SpanSpec {
  name: string;
  /** 32 hex digits; a fresh one when unset. */
  traceId?: string;
  /** 16 hex digits; a fresh one when unset. */
  spanId?: string;
  parentSpanId?: string;
  /** Integers become intValue, other numbers doubleValue. */
  attributes: Record<string, string | number | boolean>;
  durationMs?: number;
  /** Status ERROR with this message. */
  error?: string;
}

export type Span = Required<Pick<SpanSpec, "traceId" | "spanId">> & SpanSpec;

/** Gives every span its ids (fresh random ones where unset), so a test can look its trace up. */
export function withIds(specs: SpanSpec[]): Span[] {
  return specs.map((spec) => ({
    ...spec,
    traceId: spec.traceId ?? randomBytes(16).toString("hex"),
    spanId: spec.spanId ?? randomBytes(8).toString("hex"),
  }));
}

const startNs = BigInt(Date.now() - 60_000) * 1_000_000n;

function times(span: SpanSpec): { start: bigint; end: bigint } {
  return { start: startNs, end: startNs + BigInt(Math.round((span.durationMs ?? 842) * 1e6)) };
}

function anyValue(value: string | number | boolean): AnyValue["value"] {
  if (typeof value === "string") return { case: "stringValue", value };
  if (typeof value === "boolean") return { case: "boolValue", value };
  return Number.isInteger(value) ? { case: "intValue", value: BigInt(value) } : { case: "doubleValue", value };
}

/** The Export in the OTLP JSON encoding: hex ids, lowerCamelCase, enums as integers, int64 as strings. */
export function otlpJson(spans: Span[], serviceName = "curl-app"): string {
  const jsonValue = (value: string | number | boolean) => {
    const { case: kind, value: v } = anyValue(value) as { case: string; value: unknown };
    return { [kind]: typeof v === "bigint" ? v.toString() : v };
  };
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: serviceName } }] },
        scopeSpans: [
          {
            scope: { name: "interop-hand-built", version: "1.0.0" },
            spans: spans.map((span) => {
              const { start, end } = times(span);
              return {
                traceId: span.traceId,
                spanId: span.spanId,
                ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
                name: span.name,
                kind: Span_SpanKind.CLIENT,
                startTimeUnixNano: start.toString(),
                endTimeUnixNano: end.toString(),
                attributes: Object.entries(span.attributes).map(([key, value]) => ({ key, value: jsonValue(value) })),
                status: span.error ? { code: 2, message: span.error } : {},
              };
            }),
          },
        ],
      },
    ],
  });
}

/** The same Export as an ExportTraceServiceRequest in protobuf. */
export function otlpProtobuf(spans: Span[], serviceName = "curl-app"): Uint8Array {
  const bytes = (hex: string | undefined) => Buffer.from(hex ?? "", "hex");
  const request = create(ExportTraceServiceRequestSchema, {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { value: { case: "stringValue", value: serviceName } } }] },
        scopeSpans: [
          {
            scope: { name: "interop-hand-built", version: "1.0.0" },
            spans: spans.map((span) => {
              const { start, end } = times(span);
              return {
                traceId: bytes(span.traceId),
                spanId: bytes(span.spanId),
                parentSpanId: bytes(span.parentSpanId),
                name: span.name,
                kind: Span_SpanKind.CLIENT,
                startTimeUnixNano: start,
                endTimeUnixNano: end,
                attributes: Object.entries(span.attributes).map(([key, value]) => ({ key, value: { value: anyValue(value) } })),
                ...(span.error ? { status: { code: 2, message: span.error } } : {}),
              };
            }),
          },
        ],
      },
    ],
  });
  return toBinary(ExportTraceServiceRequestSchema, request);
}

/** A GenAI chat span as OpenTelemetry's semantic conventions describe it. */
export function chatSpan(
  provider: string,
  model: string,
  tokensIn: number,
  tokensOut: number,
  more: Record<string, string | number | boolean> = {},
): SpanSpec {
  return {
    name: `chat ${model}`,
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      "gen_ai.request.model": model,
      "gen_ai.usage.input_tokens": tokensIn,
      "gen_ai.usage.output_tokens": tokensOut,
      ...more,
    },
  };
}

export interface CurlAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * POSTs `body` with the real curl binary (gzip-compressed first when `gzip`, with
 * Content-Encoding: gzip) and answers the status, the headers (lower-case names) and the body.
 */
export async function curlPost(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string>,
  options: { gzip?: boolean } = {},
): Promise<CurlAnswer> {
  const dir = tempDir("calltrace-curl-");
  const [bodyFile, answerFile, headerFile] = ["request", "answer", "headers"].map((name) => join(dir, name)) as [string, string, string];
  writeFileSync(bodyFile, options.gzip ? gzipSync(body) : body);
  const all = { ...headers, ...(options.gzip ? { "Content-Encoding": "gzip" } : {}) };
  const args = [
    "--silent",
    "--show-error",
    "--request",
    "POST",
    "--data-binary",
    `@${bodyFile}`,
    "--output",
    answerFile,
    "--dump-header",
    headerFile,
  ];
  for (const [name, value] of Object.entries(all)) args.push("--header", `${name}: ${value}`);
  const result = await runProcess("curl", [...args, url], { timeoutMs: 30_000 });
  if (result.status !== 0) {
    throw new Error(`curl exited ${result.status} (the OTLP tests need curl on PATH; Debian: apt-get install curl): ${result.output}`);
  }
  const lines = readFileSync(headerFile, "utf8").split("\r\n");
  const status = Number(/^HTTP\/\S+ (\d{3})/.exec(lines[0] ?? "")?.[1]);
  const answerHeaders: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) answerHeaders[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status, headers: answerHeaders, body: existsSync(answerFile) ? readFileSync(answerFile) : Buffer.alloc(0) };
}
