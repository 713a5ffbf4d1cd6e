import { Code, ConnectError } from "@connectrpc/connect";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { ErrorGroupSchema, RunSummarySchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import { webHeaders } from "../dashboard/trace-download.js";
import { traceJson } from "../download/trace-lines.js";
import { refusalText } from "../ingest/ingest-errors.js";
import type { HeaderFields } from "../limits/rate-limit-headers.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import { InvalidCursorError } from "../store/trace-cursor.js";
import { TooManyGroupsError, type TraceReader } from "../store/trace-reader.js";
import { authorize, requestAddress, type AccessDeps } from "../teams/access-interceptor.js";
import { projectFilter, projectKeptSince } from "../teams/project-retention.js";
import { contractJson } from "./contract-json.js";
import { metricsRows } from "./metrics-rows.js";
import { errorsQuery, metricsQuery, ReadQueryError, runQuery, runsQuery, tracesQuery } from "./read-query.js";
import { encodeRunCursor } from "./run-cursor.js";

/** The REST read routes, answered with the spec's REST error bodies. */
export interface ReadApi {
  /** `GET /v1/traces`: a page of the project's traces, newest first, as the JSONL download writes them. */
  traces(req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void>;
  /** `GET /v1/metrics`: the project's usage, in total or per group. */
  metrics(req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void>;
  /** `GET /v1/errors`: the project's failed calls grouped by masked message, most calls first. */
  errors(req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void>;
  /** `GET /v1/runs`: a page of the project's runs, most recently ended first. */
  runs(req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void>;
  /** `GET /v1/runs/{id}`: one run and its calls by start. */
  run(req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void>;
}

/** The path of a run: its id follows, URL-encoded. */
export const runPathPrefix = "/v1/runs/";

/** What a route answers once the caller may read the project: its JSON body (200), or an error the refusals name. */
type Read = (projectId: string, url: URL, narrow: (filter: TraceFilter) => TraceFilter, keptSinceMs: number | undefined) => Promise<unknown>;

/**
 * The read API for scripts: a read key (`Authorization: Bearer`), or a dashboard session naming
 * the project in `project`, is let in by the same authorize() as QueryService, counting a read
 * key's read limit; the project's retention narrows every read (projectFilter, projectKeptSince). Access is decided
 * before the query is looked at, so strangers learn nothing of the API.
 */
export function readApi(reader: TraceReader, access: AccessDeps): ReadApi {
  const route = (read: Read) => async (req: NodeRequest, res: NodeResponse, common: HeaderFields) => {
    const url = requestUrl(req);
    let granted: Awaited<ReturnType<typeof authorize>>;
    try {
      granted = await authorize(
        access,
        projectRead,
        webHeaders(req),
        url.href,
        { projectId: url.searchParams.get("project") ?? "" },
        false,
        requestAddress(access, req),
      );
    } catch (error) {
      return sendRefusal(res, error, common);
    }
    const headers = { ...common, ...granted.headers, "cache-control": "no-store" };
    if (granted.access.kind !== "project") throw new Error("a project policy granted no project");
    const project = granted.access.project;
    try {
      sendJson(res, 200, await read(project.id, url, (filter) => projectFilter(project, filter), projectKeptSince(project)), headers);
    } catch (error) {
      const refused = error instanceof ConnectError && error.code === Code.NotFound;
      if (refused || error instanceof ReadQueryError || error instanceof InvalidCursorError || error instanceof TooManyGroupsError) {
        return sendRefusal(res, error, headers);
      }
      throw error;
    }
  };

  return {
    traces: route(async (projectId, { searchParams }, narrow) => {
      const query = tracesQuery(searchParams);
      const page = await reader.listTraces(projectId, narrow(query.filter), {
        pageSize: query.pageSize,
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      return { data: page.traces.map(traceJson), next_cursor: page.nextCursor || null };
    }),
    metrics: route(async (projectId, { searchParams }, narrow) => {
      const query = metricsQuery(searchParams);
      return metricsRows(reader, projectId, narrow(query.filter), query);
    }),
    errors: route(async (projectId, { searchParams }, narrow) => {
      const query = errorsQuery(searchParams);
      const answer = await reader.errorGroups(projectId, narrow(query.filter), query.limit);
      return {
        data: answer.groups.map((group) => contractJson(ErrorGroupSchema, group)),
        total_errors: answer.totalErrors,
        total_groups: answer.totalGroups,
      };
    }),
    runs: route(async (projectId, { searchParams }, narrow) => {
      const query = runsQuery(searchParams);
      // One run more than the page: whether there is a next page.
      const runs = await reader.listRuns(projectId, narrow(query.filter), "recent", query.pageSize + 1, query.after);
      const page = runs.slice(0, query.pageSize);
      const last = page.at(-1);
      return {
        data: page.map((run) => contractJson(RunSummarySchema, run)),
        next_cursor: runs.length > query.pageSize && last ? encodeRunCursor({ endMs: timestampMs(last.end!), id: last.id }) : null,
      };
    }),
    run: route(async (projectId, { pathname, searchParams }, _narrow, keptSinceMs) => {
      const id = runQuery(pathname.slice(runPathPrefix.length), searchParams);
      const detail = await reader.getRun(projectId, id, keptSinceMs);
      // Another project's run is as unknown as one that never existed.
      if (!detail) throw new ConnectError(`no run with id ${JSON.stringify(id)}`, Code.NotFound);
      return { run: contractJson(RunSummarySchema, detail.run), calls: detail.calls.map(traceJson), truncated: detail.truncated };
    }),
  };
}

const projectRead = { kind: "project", permission: "project.read", readKey: true } as const;

/** The request's absolute URL, its host as the client named it (the same-origin check compares Origin with it). */
function requestUrl(req: NodeRequest): URL {
  const host = req.headers.host ?? req.headers[":authority"];
  return new URL(req.url ?? "/", `http://${typeof host === "string" && host !== "" ? host : "localhost"}`);
}

/**
 * A refusal in the spec's REST shapes: 401 exactly as ingest answers it, 429 with `retry_after`
 * and the rate-limit headers, 400 `Validation error` naming the problem; 403 and 404 say why.
 */
function sendRefusal(res: NodeResponse, error: unknown, headers: HeaderFields): void {
  if (!(error instanceof ConnectError)) {
    sendJson(res, 400, { error: "Validation error", details: (error as Error).message }, headers);
    return;
  }
  switch (error.code) {
    case Code.Unauthenticated:
      // Unknown, revoked, missing: indistinguishable, as on ingest (D2).
      sendJson(res, 401, { error: "Unauthorized", message: refusalText.invalidApiKey }, { ...headers, "www-authenticate": "Bearer" });
      return;
    case Code.PermissionDenied:
      sendJson(res, 403, { error: "Forbidden", message: error.rawMessage }, headers);
      return;
    case Code.NotFound:
      sendJson(res, 404, { error: "Not found", message: error.rawMessage }, headers);
      return;
    case Code.ResourceExhausted: {
      const limited = { ...headers, ...Object.fromEntries(error.metadata) };
      sendJson(res, 429, { error: refusalText.rateLimited, retry_after: Number(error.metadata.get("retry-after")) || 1 }, limited);
      return;
    }
    default:
      // A session naming no project: the REST name of the parameter.
      sendJson(res, 400, { error: "Validation error", details: error.rawMessage.replace(/^project_id\b/, "project") }, headers);
  }
}
