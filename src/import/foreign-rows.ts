import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { callTimeProblem, timestampMsChecked } from "../ingest/call-time.js";
import { apiOrigin, storedTraceOf } from "../ingest/stored-trace.js";
import { traceFromJson } from "../ingest/trace-json.js";
import { describeProblems, submissionProblems } from "../ingest/trace-validation.js";
import type { TraceWrite } from "../store/trace-store.js";
import { apiKeyStandIn, type ImportContext, importKeyId } from "./import-item.js";

/** A trace of another tool's export, as the body of `POST /v1/traces` (with `called_at`), and its id there; undefined to skip the row (not an LLM call). */
export type ForeignMapping = (row: JsonObject) => { body: Record<string, unknown>; id: string } | undefined;

/**
 * A row of another tool's export as a write, checked as a POST of its mapped body would be, and
 * priced by the server as such a trace is. It is keyed by the tool's own id, so a file imported
 * again stores nothing twice.
 */
export function foreignRowWrite(row: JsonObject, map: ForeignMapping, source: string, context: ImportContext): TraceWrite | string | undefined {
  const mapped = map(row);
  if (mapped === undefined) return undefined;
  const { trace, problems: decodeProblems } = traceFromJson({ ...mapped.body, api_key: apiKeyStandIn });
  const problems = submissionProblems(trace, decodeProblems);
  if (trace.calledAt === undefined) problems.push({ field: "called_at", problem: "is required (the row has no start time)" });
  else {
    const problem = callTimeProblem(timestampMsChecked(trace.calledAt), context.nowMs, context.keepDays);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) return describeProblems(problems);
  const receipt = { keyId: importKeyId, accountId: context.projectId, country: "", receivedAtMs: context.nowMs };
  const stored = storedTraceOf(trace, receipt, apiOrigin(trace, context.book, timestampDate(trace.calledAt!)));
  return { trace: stored, idempotencyKey: undefined, importKey: `${source}:${mapped.id}` };
}

/** The provider of a model, by the names each provider gives its models; "" where none does (the API's check then says so). */
function providerOfModel(model: string): string {
  if (/^(gpt|o\d|chatgpt|text-embedding|davinci|ft:gpt)/i.test(model)) return "openai";
  if (/^claude/i.test(model)) return "anthropic";
  if (/^(gemini|models\/gemini)/i.test(model)) return "gemini";
  return "";
}

const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
const number = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
const first = (row: JsonObject, ...names: string[]) => names.map((n) => row[n]).find((v) => v !== undefined && v !== null);

/** `2024-05-29 13:46:19.963000` (Langfuse's blob export, UTC) or RFC 3339, as RFC 3339. */
function rfc3339(value: unknown): string | undefined {
  const time = text(value);
  if (time === undefined) return undefined;
  return /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$/.test(time) ? `${time.replace(" ", "T")}Z` : time;
}

/** The string entries of an object whose keys the contract takes as metadata keys. */
function stringEntries(value: unknown): Record<string, string> | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value).filter(([k, v]) => typeof v === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(k));
  return entries.length === 0 ? undefined : (Object.fromEntries(entries) as Record<string, string>);
}

function defined(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

/**
 * Langfuse observations, as its public API (`GET /api/public/observations`, camelCase) or its blob
 * storage export (enriched `observations_v2`, snake_case) writes them: each GENERATION is a call.
 */
export const langfuseMapping: ForeignMapping = (row) => {
  if (String(row.type ?? "").toUpperCase() !== "GENERATION") return undefined;
  const usage = (first(row, "usageDetails", "usage_details", "usage") ?? {}) as JsonObject;
  const cost = (first(row, "costDetails", "cost_details") ?? {}) as JsonObject;
  const model = text(first(row, "model", "providedModelName", "provided_model_name")) ?? "";
  const start = rfc3339(first(row, "startTime", "start_time"));
  const end = rfc3339(first(row, "endTime", "end_time"));
  const latency = start && end ? Date.parse(end) - Date.parse(start) : undefined;
  const failed = String(row.level ?? "").toUpperCase() === "ERROR";
  const body = defined({
    provider: providerOfModel(model),
    model,
    tokens_in: number(first(usage, "input", "promptTokens")) ?? 0,
    tokens_out: number(first(usage, "output", "completionTokens")) ?? 0,
    latency_ms: latency !== undefined && latency >= 0 ? Math.round(latency) : 0,
    cost_usd: number(first(cost, "total")) ?? number(first(row, "calculatedTotalCost", "total_cost", "totalCost")) ?? 0,
    status: failed ? "error" : "success",
    error: failed ? (text(first(row, "statusMessage", "status_message")) ?? "") : undefined,
    called_at: start,
    user_id: text(first(row, "userId", "user_id")),
    session_id: text(first(row, "sessionId", "session_id")),
    tags: Array.isArray(row.tags) ? row.tags : undefined,
    environment: text(row.environment),
    metadata: stringEntries(row.metadata),
  });
  return { body, id: String(row.id ?? "") };
};

const heliconeProviders: Record<string, string> = { OPENAI: "openai", AZURE: "openai", ANTHROPIC: "anthropic", GOOGLE: "gemini", GEMINI: "gemini" };

/** Helicone requests, as its export tool (`npx @helicone/export`, JSON or JSONL) and its request query API write them. */
export const heliconeMapping: ForeignMapping = (row) => {
  const model = text(first(row, "response_model", "request_model", "model")) ?? "";
  const status = number(row.response_status) ?? 200;
  const promptTokens = number(row.prompt_tokens) ?? 0;
  const cacheRead = number(row.prompt_cache_read_tokens);
  const cacheWrite = number(row.prompt_cache_write_tokens);
  const cached = (cacheRead ?? 0) + (cacheWrite ?? 0);
  const started = rfc3339(row.request_created_at);
  const answered = rfc3339(row.response_created_at);
  const latency = number(row.delay_ms) ?? (started && answered ? Date.parse(answered) - Date.parse(started) : 0);
  const properties = stringEntries(row.request_properties);
  const body = defined({
    provider: heliconeProviders[String(row.provider ?? "").toUpperCase()] ?? providerOfModel(model),
    model,
    // Helicone's prompt count leaves Anthropic's cache reads and writes out: every input token counts in tokens_in.
    tokens_in: cached > promptTokens ? promptTokens + cached : promptTokens,
    tokens_out: number(row.completion_tokens) ?? 0,
    tokens_cached_in: cacheRead,
    tokens_cache_write: cacheWrite,
    latency_ms: Math.max(0, Math.round(latency)),
    ttft_ms: number(row.time_to_first_token) === undefined ? undefined : Math.min(Math.round(number(row.time_to_first_token)!), Math.max(0, Math.round(latency))),
    cost_usd: number(row.cost) ?? number(row.cost_usd) ?? 0,
    status: status >= 400 ? "error" : "success",
    error: status >= 400 ? `HTTP ${status}` : undefined,
    called_at: started,
    user_id: text(row.request_user_id),
    session_id: properties?.["Helicone-Session-Id"],
    metadata: properties,
  });
  return { body, id: String(row.request_id ?? "") };
};

export const foreignMappings: Record<string, ForeignMapping> = { langfuse: langfuseMapping, helicone: heliconeMapping };

