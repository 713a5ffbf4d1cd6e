import { getOption } from "@bufbuild/protobuf";
import { type FieldRules, field as fieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { BudgetStatusSchema } from "../../gen/calltrace/v1/alert_pb.js";
import { ErrorGroupSchema, RunSummarySchema, TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { TraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { filterParams } from "../dashboard/trace-download.js";
import { groupByNames, maxErrorGroups, maxGroups, maxRunsPerPage, maxTracesPerPage } from "../read-api/read-query.js";
import { maxRunId } from "../store/run-id.js";
import { protoJsonSchema } from "./proto-json-schema.js";
import { storedTraceJsonSchema } from "./stored-trace-schema.js";
import { type JsonSchema, messageJsonSchema } from "./trace-json-schema.js";

/** What the .proto comments say of each Trace field, in short (the names, types and rules come from the descriptor). */
const traceFieldDescriptions: Record<string, string> = {
  provider: "The LLM provider that served the call.",
  model: "Model name of the call, for example `gpt-4o-2024-08-06`.",
  tokens_in: "Number of input (prompt) tokens.",
  tokens_out: "Number of output (completion) tokens.",
  latency_ms: "Wall-clock latency of the call in milliseconds.",
  cost_usd: "Cost of the call in US dollars, computed by the client; a finite number >= 0.",
  api_key: "The caller's API key (`ct_...`); must equal the key in the Authorization header (D3). Never stored.",
  status: "Outcome of the LLM call.",
  error: "Error message of a failed call; only allowed when `status` is `error` (D6). `null` counts as absent.",
  tokens_cached_in: "Input tokens read from the provider's prompt cache; part of `tokens_in`, priced at the cached-input rate.",
  tokens_cache_write: "Input tokens written to the provider's prompt cache; part of `tokens_in`, priced at the cache-write rate.",
  tokens_reasoning: "Output tokens spent reasoning (thinking); part of `tokens_out`.",
  user_id: "The application's id of the end user or customer the call was made for.",
  session_id: "The conversation, thread or run the call belongs to.",
  tags: "Labels such as the feature that made the call.",
  metadata: "Further attributes of the call, string to string.",
  environment: "The deployment the call came from, such as `production`.",
  ttft_ms: "Streams only: milliseconds from the request to the first token; at most `latency_ms`.",
  service_tier: "The processing tier the call was billed at; omitted means `standard`.",
  tokens_cache_write_1h: "The part of `tokens_cache_write` written to a 1-hour cache; priced at the 1-hour cache-write rate.",
  tokens_audio_in: "Uncached input tokens that were audio; part of `tokens_in`, priced at the audio-input rate.",
  tokens_audio_out: "Output tokens that were audio; part of `tokens_out`, priced at the audio-output rate.",
  web_search_requests: "Web searches (or Gemini search groundings) the provider billed for the call.",
  called_at:
    "When the call was made (its start), RFC 3339. The trace is placed at this time; without it, at its receipt. At most 5 minutes ahead of the server's clock and no older than the project's retention.",
};

/** The contract's CEL rules on Trace, in JSON Schema. */
const traceRuleSchemas: Record<string, JsonSchema> = {
  "trace.error_only_on_error": {
    description: "`error` must be omitted (or null) when `status` is `success`.",
    if: { properties: { status: { const: "success" } }, required: ["status"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
    then: { properties: { error: { type: "null" } } },
  },
  // JSON Schema cannot compare two fields: these two are stated, and the server enforces them (400).
  "trace.cache_within_input": { description: "`tokens_cached_in` + `tokens_cache_write` must not exceed `tokens_in`." },
  "trace.reasoning_within_output": { description: "`tokens_reasoning` must not exceed `tokens_out`." },
  "trace.ttft_within_latency": { description: "`ttft_ms` must not exceed `latency_ms`." },
  "trace.cache_write_1h_within_cache_write": { description: "`tokens_cache_write_1h` needs `tokens_cache_write` and must not exceed it." },
  "trace.audio_within_input": { description: "`tokens_audio_in` + `tokens_cached_in` + `tokens_cache_write` must not exceed `tokens_in`." },
  "trace.audio_within_output": { description: "`tokens_audio_out` must not exceed `tokens_out`." },
};

const integerHeader = (description: string, required = false) => ({ description, required, schema: { type: "integer", minimum: 0 } });
const requestId = {
  description: "The request's id: the client's X-Request-Id when it sent a sane one (1-128 of A-Z a-z 0-9 . _ : -), else a new one.",
  required: true,
  schema: { type: "string", minLength: 1, maxLength: 128 },
};
const rateLimitHeaders = (required: boolean) => ({
  "X-RateLimit-Limit": integerHeader("Requests allowed in the key's 60-second window (D10).", required),
  "X-RateLimit-Remaining": integerHeader("Requests left in the window after this one.", required),
  "X-RateLimit-Reset": integerHeader("Unix time in whole seconds when the window resets.", required),
  "X-Quota-Limit": integerHeader("Traces allowed this calendar month (D11)."),
  "X-Quota-Remaining": integerHeader("Traces left this month."),
  "X-Quota-Reset": integerHeader("Unix time in whole seconds when the month's quota resets."),
  "X-Request-Id": requestId,
});
const retryAfter = { "Retry-After": integerHeader("Seconds to wait before retrying.", true) };

const errorBody = (
  error: string,
  field: "details" | "message",
  fieldSchema: JsonSchema = { type: "string", minLength: 1 },
): JsonSchema => ({
  type: "object",
  properties: { error: { const: error }, [field]: fieldSchema },
  required: ["error", field],
  additionalProperties: false,
});
const retryBody = (error: string, maximum?: number): JsonSchema => ({
  type: "object",
  properties: { error: { const: error }, retry_after: { type: "integer", minimum: 1, ...(maximum ? { maximum } : {}) } },
  required: ["error", "retry_after"],
  additionalProperties: false,
});
/** A page of a listing: its items, and the cursor to the next page. */
const pageSchema = (item: string): JsonSchema => ({
  type: "object",
  properties: {
    data: { type: "array", items: { $ref: `#/components/schemas/${item}` } },
    next_cursor: { type: ["string", "null"], description: "Pass as `cursor` for the next page; null on the last page." },
  },
  required: ["data", "next_cursor"],
  additionalProperties: false,
});
const json = (schema: JsonSchema) => ({ "application/json": { schema } });
const plainResponse = (description: string, schema: JsonSchema, headers: Record<string, unknown> = {}) => ({
  description,
  headers: { "X-Request-Id": requestId, ...headers },
  content: json(schema),
});

const readLimitHeaders = {
  "X-RateLimit-Limit": integerHeader("Reads allowed in the read key's 60-second window (READ_PER_MINUTE); absent for a dashboard session."),
  "X-RateLimit-Remaining": integerHeader("Reads left in the window after this one."),
  "X-RateLimit-Reset": integerHeader("Unix time in whole seconds when the window resets."),
  "X-Request-Id": requestId,
};

/** What the dashboard's filters mean as query parameters (dashboard/trace-download.ts filterFromQuery). */
const filterDescriptions: Record<string, string> = {
  key_id: "Only traces sent with this API key id.",
  provider: "Only this provider: `openai`, `anthropic` or `gemini`.",
  model: "Only this model (exact match).",
  status: "Only `success` or only `error`.",
  user: "Only traces sent for this end user (exact match).",
  session: "Only traces of this session (exact match).",
  tag: "Only traces carrying this tag; repeat for several (every one must be carried).",
  env: "Only traces from this environment (exact match).",
  service: "Only traces of this service (the OTLP `service.name`, or else the metadata entry `service`).",
  otlp: "Only the spans of this OTLP trace (32 lower-case hex digits).",
  q: "Only traces whose model name contains this text, ignoring case.",
  model_contains: "The same as `q`; `q` wins when both are given.",
  error: "Only traces whose error message contains this text, ignoring case.",
};

/** The TraceFilter field each filter parameter sets (filterFromQuery). */
const filterFields: Record<string, string> = {
  key_id: "key_id",
  provider: "provider",
  model: "model",
  status: "status",
  user: "user_id",
  session: "session_id",
  tag: "tags",
  env: "environment",
  service: "service",
  otlp: "otlp_trace_id",
  q: "model_contains",
  model_contains: "model_contains",
  error: "error_contains",
};

/** A filter parameter's schema, its limits read off TraceFilter's rules so the two cannot drift. */
function filterParamSchema(name: string): JsonSchema {
  const field = TraceFilterSchema.fields.find((f) => f.name === filterFields[name]);
  if (!field) throw new Error(`openapi: the filter parameter ${name} names no TraceFilter field`);
  const rules = getOption(field, fieldRules).type;
  const maxLength = (r: FieldRules["type"] | undefined) =>
    r?.case === "string" && Object.hasOwn(r.value, "maxLen") ? { maxLength: Number(r.value.maxLen) } : {};
  if (rules.case === "repeated") {
    return { type: "array", items: { type: "string", ...maxLength(rules.value.items?.type) }, maxItems: Number(rules.value.maxItems) };
  }
  return { type: "string", ...maxLength(rules) };
}

const query = (name: string, description: string, schema: JsonSchema) => ({ name, in: "query", required: false, description, schema });

/** The parameters the read routes over a range take: the range, the project and the dashboard's filters. */
const readParameters = [
  query("from", "Inclusive lower bound on the receive time, an RFC 3339 date-time (for example `2026-01-31T00:00:00Z`).", {
    type: "string",
    format: "date-time",
  }),
  query("to", "Exclusive upper bound on the receive time, an RFC 3339 date-time; not before `from`.", {
    type: "string",
    format: "date-time",
  }),
  query("project", "The project to read: a read key reads its own (another id is 404); a dashboard session must name one.", {
    type: "string",
    maxLength: 64,
  }),
  ...filterParams.map((name) => ({
    ...query(name, filterDescriptions[name]!, filterParamSchema(name)),
    ...(name === "tag" ? { explode: true } : {}),
  })),
];

/** Node's HTTP/1.1 parser refuses a request whose URL and headers are too long, before any route is chosen. */
const headerFieldsTooLarge = {
  "431": plainResponse(
    "The request line and headers exceed Node's header limit (16 KB unless --max-http-header-size says otherwise); the connection is closed.",
    {
      $ref: "#/components/schemas/HeaderFieldsTooLarge",
    },
  ),
};

/** The refusals every read route answers. */
const readRefusals = {
  "400": plainResponse(
    "A parameter is not valid (named in `details`): a time that is not RFC 3339, `from` after `to`, an unknown parameter, a bad `group_by`, `limit`, `cursor` or run id.",
    {
      $ref: "#/components/schemas/ValidationError",
    },
    readLimitHeaders,
  ),
  "401": {
    description: "No credentials, or an unknown, revoked or expired key: indistinguishable, as on ingest (D2).",
    headers: { "WWW-Authenticate": { required: true, schema: { const: "Bearer" } }, "X-Request-Id": requestId },
    content: json({ $ref: "#/components/schemas/Unauthorized" }),
  },
  "403": plainResponse("An ingest key (its scope is named), or a browser request from another site.", {
    $ref: "#/components/schemas/Forbidden",
  }),
  "404": plainResponse("`project` names a project the caller cannot read (as if it did not exist).", {
    $ref: "#/components/schemas/NotFound",
  }),
  "429": {
    description: "The read key's per-minute read limit (READ_PER_MINUTE), counted apart from its ingest limit.",
    headers: { ...readLimitHeaders, ...retryAfter },
    content: json({ $ref: "#/components/schemas/RateLimited" }),
  },
  ...headerFieldsTooLarge,
};
const readSecurity = [{ readKey: [] }, { session: [] }];

/** A read route's GET over a range: the range and the filters, its own parameters, its answer and the read refusals. */
function rangeRead(op: {
  operationId: string;
  summary: string;
  description: string;
  parameters: unknown[];
  answer: string;
  schema: string;
}) {
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    security: readSecurity,
    parameters: [...readParameters, ...op.parameters],
    responses: {
      "200": plainResponse(op.answer, { $ref: `#/components/schemas/${op.schema}` }, readLimitHeaders),
      ...readRefusals,
    },
  };
}

/**
 * The OpenAPI 3.1 document of the REST surface: `POST /v1/traces` with every status and body of
 * the decisions (D1-D15), the read API (`GET /v1/traces`, `/v1/metrics`, `/v1/errors`, `/v1/runs`, `/v1/runs/{id}`),
 * `GET /v1/budget`, `/healthz` and `/readyz`. The Trace schema and the read API's error groups and runs are derived
 * from the contract's descriptor; the rest restates docs/decisions.md.
 */
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "calltrace",
      version: "1",
      summary: "Self-hostable LLM usage tracing: one trace per LLM call.",
      description:
        "The REST surface of calltrace. The same Ingest is served over gRPC, gRPC-Web and Connect on the same port (see proto/calltrace/v1/trace_service.proto). `D<n>` cites decision n of the project's decision record, docs/decisions.md in the calltrace repository (anchor #d<n>).",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: `ct_` followed by at least 32 base62 characters (D18)." },
        readKey: {
          type: "http",
          scheme: "bearer",
          description: "An API key with the read scope (`calltrace keys create --scope read`); it reads its own project.",
        },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "ct_session",
          description: "A dashboard session; the request names its project in `project`.",
        },
      },
      schemas: {
        Trace: { title: "Trace", ...messageJsonSchema(TraceSchema, traceFieldDescriptions, traceRuleSchemas) },
        Accepted: { type: "object", properties: { status: { const: "ok" } }, required: ["status"], additionalProperties: false },
        ValidationError: errorBody("Validation error", "details"),
        Unauthorized: errorBody("Unauthorized", "message", { const: "Invalid API key" }),
        PayloadTooLarge: errorBody("Payload too large", "details"),
        HeaderFieldsTooLarge: errorBody("Request header fields too large", "details"),
        UnsupportedMediaType: errorBody("Unsupported media type", "details"),
        RateLimited: retryBody("Rate limit exceeded", 60),
        QuotaExceeded: retryBody("Monthly quota exceeded"),
        ServiceUnavailable: retryBody("Service unavailable"),
        MethodNotAllowed: {
          type: "object",
          properties: { error: { const: "Method not allowed" } },
          required: ["error"],
          additionalProperties: false,
        },
        StoredTrace: storedTraceJsonSchema(),
        BudgetStatus: {
          ...protoJsonSchema(BudgetStatusSchema),
          description:
            "BudgetStatus in proto/calltrace/v1/alert.proto, as protobuf's JSON writes it: fields at their default are left out.",
        },
        TracePage: pageSchema("StoredTrace"),
        Metrics: {
          type: "object",
          properties: {
            data: { type: "array", items: { $ref: "#/components/schemas/MetricsRow" } },
            total_groups: {
              type: "integer",
              minimum: 0,
              description: "With an attribute `group_by`: how many groups matched, of which `data` holds the first `limit`.",
            },
            whole_days: {
              type: "boolean",
              enum: [true],
              description:
                "With an attribute `group_by`, present (true) when the range's ends were counted as whole UTC days: the part of a day at an end held too many traces to group in time (over 20,000; over 2,500 for tags and metadata keys).",
            },
          },
          required: ["data"],
          additionalProperties: false,
        },
        MetricsRow: {
          type: "object",
          properties: {
            group: {
              type: ["string", "null"],
              description:
                "The group's value (a model, a UTC day as YYYY-MM-DD, a user id, ...; empty for traces without one); null for the total row.",
            },
            other: {
              type: "boolean",
              enum: [true],
              description:
                "Present (true) on the other group of an attribute `group_by`: the values sent on a day after the server's bound on distinct values per day (`GROUP_VALUES_PER_DAY`), counted together; `group` is empty.",
            },
            calls: { type: "integer", minimum: 0 },
            errors: { type: "integer", minimum: 0 },
            cost_usd: {
              oneOf: [
                { type: "number", minimum: 0 },
                { type: "string", enum: ["Infinity"] },
              ],
              description: "The sum of the clients' `cost_usd`; the string `Infinity` when it passes the largest double.",
            },
            tokens_in: { type: "integer", minimum: 0 },
            tokens_out: { type: "integer", minimum: 0 },
            p50_latency_ms: {
              type: "integer",
              minimum: 0,
              description: "Median latency, from latency buckets at most 5 % wide, never below the true value; 0 without calls.",
            },
            p95_latency_ms: { type: "integer", minimum: 0, description: "95th percentile latency, read like `p50_latency_ms`." },
          },
          required: ["group", "calls", "errors", "cost_usd", "tokens_in", "tokens_out", "p50_latency_ms", "p95_latency_ms"],
          additionalProperties: false,
        },
        ErrorGroups: {
          type: "object",
          properties: {
            data: { type: "array", items: { $ref: "#/components/schemas/ErrorGroup" } },
            total_errors: { type: "integer", minimum: 0, description: "Failed calls in view, in every group." },
            total_groups: {
              type: "integer",
              minimum: 0,
              description: "How many groups there were, of which `data` holds the first `limit`.",
            },
          },
          required: ["data", "total_errors", "total_groups"],
          additionalProperties: false,
        },
        ErrorGroup: {
          ...protoJsonSchema(ErrorGroupSchema, "read-api"),
          description:
            "ErrorGroup in proto/calltrace/v1/query.proto: the failed calls whose message is the same once numbers, ids, UUIDs, hex, e-mail addresses and quoted values are masked (D59). `id` is 16 hex digits, or `other` for the groups past the cap per project and day.",
        },
        RunSummary: {
          ...protoJsonSchema(RunSummarySchema, "read-api"),
          description:
            "RunSummary in proto/calltrace/v1/query.proto: the calls sharing an OTLP trace id (`otlp:<id>`), or else a session id (`session:<id>`) (D59). A call starts at its receive time less its latency, or at its `called_at`.",
        },
        RunPage: pageSchema("RunSummary"),
        Run: {
          type: "object",
          properties: {
            run: { $ref: "#/components/schemas/RunSummary" },
            calls: {
              type: "array",
              items: { $ref: "#/components/schemas/StoredTrace" },
              description: "Earliest start first, each as the JSONL download writes it; at most 2,000.",
            },
            truncated: { type: "boolean", description: "The run has more calls than `calls` holds." },
          },
          required: ["run", "calls", "truncated"],
          additionalProperties: false,
        },
        Forbidden: errorBody("Forbidden", "message"),
        NotFound: errorBody("Not found", "message"),
        RequestTimeout: {
          type: "object",
          properties: { error: { const: "Request timeout" } },
          required: ["error"],
          additionalProperties: false,
        },
      },
    },
    paths: {
      "/v1/traces": {
        post: {
          operationId: "ingestTrace",
          summary: "Record one trace",
          description:
            "Checks run in the order of D1: Authorization (401), failed-authentication limit per client address (429), the key's per-minute limit (429), body size (413), Content-Type (415), body validation (400), body key equals header key (400), monthly quota (429), durable write (202, or 503). 202 is sent only once the trace is durably stored (D13). The same path also takes OpenTelemetry OTLP/HTTP trace Exports, `application/x-protobuf` or JSON whose top-level object has `resourceSpans`, optionally gzip-compressed, answered as OTLP/HTTP specifies (200 with an ExportTraceServiceResponse, refusals with a google.rpc.Status): see docs/otlp.md. They are not described here.",
          security: [{ apiKey: [] }],
          parameters: [
            {
              name: "Idempotency-Key",
              in: "header",
              required: false,
              description:
                "Makes retries safe: a repeat with the same key within 24 hours answers as the first time and stores nothing new (D14).",
              schema: { type: "string", minLength: 1, maxLength: 128 },
            },
          ],
          requestBody: { required: true, content: json({ $ref: "#/components/schemas/Trace" }) },
          responses: {
            "202": {
              description: "Stored.",
              headers: rateLimitHeaders(true),
              content: json({ $ref: "#/components/schemas/Accepted" }),
              links: {
                RetryWithTheSameIdempotencyKey: {
                  operationId: "ingestTrace",
                  description: "A retry with the same Idempotency-Key answers as the first time and stores nothing new (D14).",
                  parameters: { "header.Idempotency-Key": "$request.header.Idempotency-Key" },
                  requestBody: "$request.body",
                },
              },
            },
            "400": {
              description:
                "Invalid body (every offending field named, D7), malformed or empty JSON, not a JSON object, not UTF-8, api_key differs from the header key (D3), bad Idempotency-Key.",
              headers: rateLimitHeaders(true),
              content: json({ $ref: "#/components/schemas/ValidationError" }),
            },
            "401": {
              description: "Missing header, not Bearer, no ct_ prefix, unknown or revoked key: indistinguishable (D2).",
              headers: { "WWW-Authenticate": { required: true, schema: { const: "Bearer" } }, "X-Request-Id": requestId },
              content: json({ $ref: "#/components/schemas/Unauthorized" }),
            },
            "408": plainResponse("The request was not received within REQUEST_TIMEOUT_MS.", {
              $ref: "#/components/schemas/RequestTimeout",
            }),
            "413": {
              description: "Body over MAX_BODY_BYTES (D9); the server stops reading.",
              headers: rateLimitHeaders(true),
              content: json({ $ref: "#/components/schemas/PayloadTooLarge" }),
            },
            "415": {
              description: "Content-Type is not application/json (D8), nor an OTLP Export's application/x-protobuf.",
              headers: rateLimitHeaders(true),
              content: json({ $ref: "#/components/schemas/UnsupportedMediaType" }),
            },
            "429": {
              description:
                "The key's per-minute limit (D10), the failed-authentication limit per client address (D12), or the monthly quota (D11).",
              headers: { ...rateLimitHeaders(false), ...retryAfter },
              content: json({ oneOf: [{ $ref: "#/components/schemas/RateLimited" }, { $ref: "#/components/schemas/QuotaExceeded" }] }),
            },
            "503": {
              description: "The store cannot take the write: down, or the write queue is full (D13).",
              headers: { ...rateLimitHeaders(false), ...retryAfter },
              content: json({ $ref: "#/components/schemas/ServiceUnavailable" }),
            },
            ...headerFieldsTooLarge,
          },
        },
        get: rangeRead({
          operationId: "listTraces",
          summary: "Read traces",
          description:
            "A page of the project's traces, newest first, each as the JSONL download writes it; follow `next_cursor` until it is null. Filters are the dashboard's; a project's own retention narrows every read.",
          parameters: [
            query("cursor", "The previous page's `next_cursor`; absent for the first page.", {
              type: "string",
              minLength: 1,
              maxLength: 512,
            }),
            query(`limit`, `Traces per page, 1 to ${maxTracesPerPage}; 100 when absent.`, {
              type: "integer",
              minimum: 1,
              maximum: maxTracesPerPage,
            }),
          ],
          answer: "A page of traces.",
          schema: "TracePage",
        }),
      },
      "/v1/metrics": {
        get: rangeRead({
          operationId: "getMetrics",
          summary: "Read usage figures",
          description:
            "Calls, errors, cost, tokens and p50/p95 latency of the project's traces: one total row without `group_by`, else one row per group, highest spend first (per day: by day). Read from the store's roll-ups, the same figures as the dashboard's.",
          parameters: [
            query(
              "group_by",
              `One of ${groupByNames.join(", ")}, or \`metadata.<key>\` for one metadata key's values. Absent: one total row.`,
              {
                type: "string",
                anyOf: [{ enum: [...groupByNames] }, { pattern: "^metadata\\.[A-Za-z0-9_.-]{1,64}$" }],
              },
            ),
            query("limit", `Most groups answered, 1 to ${maxGroups}; ${maxGroups} when absent (not for \`day\`).`, {
              type: "integer",
              minimum: 1,
              maximum: maxGroups,
            }),
          ],
          answer: "The figures.",
          schema: "Metrics",
        }),
      },
      "/v1/errors": {
        get: rangeRead({
          operationId: "getErrorGroups",
          summary: "Read error groups",
          description:
            "The project's failed calls grouped by masked message, most calls first: count, share of the failures in view, first and last seen, cost, and the models, keys and users most affected with how many there were. The dashboard's Errors view reads the same (GetErrorGroups).",
          parameters: [
            query("limit", `Most groups answered, 1 to ${maxErrorGroups}; 50 when absent.`, {
              type: "integer",
              minimum: 1,
              maximum: maxErrorGroups,
            }),
          ],
          answer: "The groups.",
          schema: "ErrorGroups",
        }),
      },
      "/v1/runs": {
        get: rangeRead({
          operationId: "listRuns",
          summary: "Read runs",
          description:
            "A page of the project's runs with a call in the range, most recently ended first (ties by id), with their calls, errors, cost, tokens, start and end; follow `next_cursor` until it is null. Unfiltered, a run's figures are the whole run's; with a filter, those of its matching calls in the range. The dashboard's Runs view reads the same (ListRuns).",
          parameters: [
            query("cursor", "The previous page's `next_cursor`; absent for the first page.", {
              type: "string",
              minLength: 1,
              maxLength: 2048,
            }),
            query("limit", `Runs per page, 1 to ${maxRunsPerPage}; 50 when absent.`, {
              type: "integer",
              minimum: 1,
              maximum: maxRunsPerPage,
            }),
          ],
          answer: "A page of runs.",
          schema: "RunPage",
        }),
      },
      "/v1/runs/{id}": {
        get: {
          operationId: "getRun",
          summary: "Read one run",
          description: "One run and its calls in start order, as the dashboard's run page reads it (GetRun).",
          security: readSecurity,
          parameters: [
            {
              name: "id",
              in: "path",
              required: true,
              description: "A run's `id`, URL-encoded: `otlp:` and 32 lower-case hex digits, or `session:` and a session id.",
              schema: { type: "string", maxLength: maxRunId, pattern: "^(otlp:[0-9a-f]{32}|session:.+)$" },
            },
            readParameters.find((p) => p.name === "project")!,
          ],
          responses: {
            "200": plainResponse("The run.", { $ref: "#/components/schemas/Run" }, readLimitHeaders),
            ...readRefusals,
            "404": plainResponse(
              "No run with this id has a call in the project (another project's run is as unknown as one that never existed), or `project` names a project the caller cannot read.",
              { $ref: "#/components/schemas/NotFound" },
            ),
          },
        },
      },
      "/v1/budget": {
        get: {
          operationId: "getBudget",
          summary: "Budget status for an ingest key",
          description:
            "The spend budgets (alert rules of kind spend) that count the calling key's calls: the project's, this key's, and those scoped to a user, tag, model, environment or metadata value. Each with its window in the project's time zone, spend, remaining and whether it is exceeded, measured from the alert scopes' counters. One key's answer is reused for BUDGET_CACHE_MS (2 s by default); SDKs poll it to refuse calls past a budget (`enforce_budget`). Counted against the key's read window (READ_PER_MINUTE), not its ingest window.",
          security: [{ apiKey: [] }],
          responses: {
            "200": plainResponse("The key's budgets, measured now.", { $ref: "#/components/schemas/BudgetStatus" }, readLimitHeaders),
            "401": {
              description: "No credentials, or an unknown, revoked, expired or read key: indistinguishable, as on ingest (D2).",
              headers: { "WWW-Authenticate": { required: true, schema: { const: "Bearer" } }, "X-Request-Id": requestId },
              content: json({ $ref: "#/components/schemas/Unauthorized" }),
            },
            "429": {
              description: "The key's per-minute read window (READ_PER_MINUTE), or too many failed authentications from the address (D12).",
              headers: { ...retryAfter },
              content: json({ $ref: "#/components/schemas/RateLimited" }),
            },
            "503": plainResponse("The key store does not answer.", { $ref: "#/components/schemas/ServiceUnavailable" }),
            ...headerFieldsTooLarge,
          },
        },
      },
      "/healthz": {
        get: {
          operationId: "health",
          summary: "The process is up",
          responses: {
            "200": plainResponse("Up.", {
              type: "object",
              properties: { status: { const: "ok" } },
              required: ["status"],
              additionalProperties: false,
            }),
          },
        },
      },
      "/readyz": {
        get: {
          operationId: "ready",
          summary: "The store answers",
          responses: {
            "200": plainResponse("Ready; a degraded limiter is reported as a note.", {
              type: "object",
              properties: { status: { const: "ready" } },
              required: ["status"],
              additionalProperties: { type: "string" },
            }),
            "503": plainResponse("The store does not answer.", {
              type: "object",
              properties: { status: { const: "unavailable" }, reason: { type: "string" } },
              required: ["status", "reason"],
              additionalProperties: false,
            }),
          },
        },
      },
      "/openapi.json": {
        get: {
          operationId: "openapi",
          summary: "This document",
          responses: { "200": plainResponse("The OpenAPI 3.1 document.", { type: "object", required: ["openapi", "paths"] }) },
        },
      },
    },
  };
}

/** The document as served and as kept in docs/openapi.json. */
export function openApiJson(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}
