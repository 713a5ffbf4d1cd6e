import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { createValidator } from "@bufbuild/protovalidate";
import { downloadLines, type DownloadFormat } from "../download/trace-lines.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { TraceReader } from "../store/trace-reader.js";
import { authorize, requestAddress, type AccessDeps } from "../teams/access-interceptor.js";
import { refuseDownload, sendDownload } from "./download-response.js";
import { projectFilter } from "../teams/project-retention.js";

const validator = createValidator();

/** Traces read per page while streaming a download. */
const pageSize = 500;

/**
 * `GET /app/export/traces.csv|jsonl?since&until&key_id&provider&model&status&user&tag...`: the
 * traces of the project named by `project` matching the filter (filterFromQuery), newest first,
 * streamed page by page so a download of millions of rows never sits in memory. A GET without
 * side effects behind a SameSite=Strict cookie, so it needs no CSRF token and a browser link can
 * start it; a read key (`Authorization: Bearer`) may download its own project's traces too.
 */
export function traceDownload(reader: TraceReader, access: AccessDeps) {
  return async (req: NodeRequest, res: NodeResponse, url: URL, format: DownloadFormat): Promise<void> => {
    const header = webHeaders(req);
    let accountId: string;
    let filter: TraceFilter;
    let limitHeaders: Record<string, string>;
    try {
      const granted = await authorize(
        access,
        { kind: "project", permission: "project.read", readKey: true },
        header,
        url.href,
        { projectId: url.searchParams.get("project") ?? "" },
        false,
        requestAddress(access, req),
      );
      if (granted.access.kind !== "project") throw new ConnectError("project: required", Code.InvalidArgument);
      accountId = granted.access.project.id;
      limitHeaders = granted.headers;
      filter = projectFilter(granted.access.project, filterFromQuery(url.searchParams));
    } catch (error) {
      refuseDownload(res, error);
      return;
    }
    await sendDownload(
      res,
      {
        name: "traces",
        extension: format,
        contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8",
        headers: limitHeaders,
      },
      downloadLines(pages(reader, accountId, filter), format),
    );
  };
}

async function* pages(reader: TraceReader, accountId: string, filter: TraceFilter): AsyncGenerator<StoredTrace> {
  let cursor: string | undefined;
  do {
    const page = await reader.listTraces(accountId, filter, { pageSize, ...(cursor ? { cursor } : {}) });
    yield* page.traces;
    cursor = page.nextCursor || undefined;
  } while (cursor);
}

/** The query parameters filterFromQuery reads besides `since` and `until` (and `meta.<key>`). */
export const filterParams = [
  "key_id",
  "provider",
  "model",
  "status",
  "user",
  "session",
  "tag",
  "env",
  "service",
  "otlp",
  "q",
  "model_contains",
  "error",
];

/**
 * The query's filter: `since` and `until` in ISO 8601, `key_id`, `provider`, `model` and `status`
 * named as TraceFilter's fields are, and the attributes as the web app's address bar names them
 * (`user`, `session`, `tag` (repeated), `meta.<key>`, `env`, `service`, `otlp`, `q` (or `model_contains`) for model text,
 * `error` for error text), so a download holds what the page shows. Checked by TraceFilter's rules.
 */
export function filterFromQuery(query: URLSearchParams): TraceFilter {
  const time = (name: string) => {
    const value = query.get(name);
    if (!value) return undefined;
    const date = new Date(value);
    if (Number.isNaN(date.getTime())) throw new Error(`${name} must be an ISO 8601 time`);
    return timestampFromDate(date);
  };
  const since = time("since");
  const until = time("until");
  const metadata: Record<string, string> = {};
  for (const [name, value] of query) if (name.startsWith("meta.")) metadata[name.slice("meta.".length)] = value;
  const filter = create(TraceFilterSchema, {
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
    keyId: query.get("key_id") ?? "",
    provider: query.get("provider") ?? "",
    model: query.get("model") ?? "",
    status: query.get("status") ?? "",
    userId: query.get("user") ?? "",
    sessionId: query.get("session") ?? "",
    tags: query.getAll("tag"),
    metadata,
    environment: query.get("env") ?? "",
    service: query.get("service") ?? "",
    otlpTraceId: query.get("otlp") ?? "",
    modelContains: query.get("q") ?? query.get("model_contains") ?? "",
    errorContains: query.get("error") ?? "",
  });
  checked(filter);
  // `q` wins over its alias, which is still held to the same rule rather than ignored.
  const alias = query.get("model_contains");
  if (query.has("q") && alias !== null) checked(create(TraceFilterSchema, { modelContains: alias }));
  return filter;
}

function checked(filter: TraceFilter): void {
  const result = validator.validate(TraceFilterSchema, filter);
  if (result.kind !== "valid") throw new Error(result.kind === "invalid" ? result.violations.map((v) => v.toString()).join("; ") : result.error.message);
}


/** A Node request's headers as fetch Headers (HTTP/2 pseudo-headers left out). */
export function webHeaders(req: NodeRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}
