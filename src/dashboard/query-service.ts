import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { RunOrder, TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import {
  GetLatencyHistogramResponseSchema,
  GetUsageByCountryResponseSchema,
  GetUsageByDayResponseSchema,
  GetUsageByDayTotalsResponseSchema,
  GetUsageByHourTotalsResponseSchema,
  GetTraceResponseSchema,
  GetUsageByGroupAndDayResponseSchema,
  GetUsageByGroupResponseSchema,
  GetUsageByModelResponseSchema,
  GetUsageTotalsResponseSchema,
  GetErrorGroupsResponseSchema,
  GetRunResponseSchema,
  ListRunsResponseSchema,
  ListTracesResponseSchema,
  type QueryService,
} from "../../gen/calltrace/v1/query_service_pb.js";
import { groupDimension } from "../store/group-dimension.js";
import { InvalidCursorError, traceSort } from "../store/trace-cursor.js";
import { TooManyGroupsError, type TraceReader } from "../store/trace-reader.js";
import { maxHours } from "../store/usage-reader.js";
import { projectAccess } from "../teams/access.js";
import { projectFilter, projectKeptSince } from "../teams/project-retention.js";

const defaultPageSize = 50;
const defaultGroupLimit = 100;
const defaultErrorGroups = 50;
const defaultRuns = 50;

/** QueryService: the store's reads, each for the one project the access interceptor let the caller read. */
export function queryService(reader: TraceReader): ServiceImpl<typeof QueryService> {
  const filterOf = (request: { filter?: TraceFilter }, context: HandlerContext) =>
    projectFilter(projectAccess(context).project, request.filter ?? create(TraceFilterSchema));
  const projectOf = (context: HandlerContext) => projectAccess(context).project.id;
  /** Where the project's own retention starts: a single trace or run read never reaches past it. */
  const keptSince = (context: HandlerContext) => projectKeptSince(projectAccess(context).project);
  return {
    async listTraces(request, context) {
      const accountId = projectOf(context);
      try {
        const page = await reader.listTraces(accountId, filterOf(request, context), {
          pageSize: request.pageSize || defaultPageSize,
          ...(request.cursor ? { cursor: request.cursor } : {}),
          sort: traceSort(request.order, request.ascending),
        });
        return create(ListTracesResponseSchema, { page });
      } catch (error) {
        if (error instanceof InvalidCursorError) throw new ConnectError(error.message, Code.InvalidArgument);
        throw error;
      }
    },
    async getUsageTotals(request, context) {
      const totals = await reader.usageTotals(projectOf(context), filterOf(request, context));
      return create(GetUsageTotalsResponseSchema, { totals });
    },
    async getUsageByModel(request, context) {
      const models = await reader.usageByModel(projectOf(context), filterOf(request, context));
      return create(GetUsageByModelResponseSchema, { models });
    },
    async getUsageByDay(request, context) {
      const days = await reader.usageByDay(projectOf(context), filterOf(request, context));
      return create(GetUsageByDayResponseSchema, { days });
    },
    async getUsageByDayTotals(request, context) {
      const days = await reader.usageByDayTotals(projectOf(context), filterOf(request, context));
      return create(GetUsageByDayTotalsResponseSchema, { days });
    },
    async getUsageByHourTotals(request, context) {
      const asked = request.filter;
      const since = asked?.since && timestampMs(asked.since);
      const until = asked?.until ? timestampMs(asked.until) : Date.now();
      if (since === undefined) throw new ConnectError("filter.since: required for usage by hour", Code.InvalidArgument);
      if (until - since > maxHours * 3_600_000) {
        throw new ConnectError(`filter: usage by hour covers at most ${maxHours} hours from since to until (or now)`, Code.InvalidArgument);
      }
      const hours = await reader.usageByHourTotals(projectOf(context), filterOf(request, context));
      return create(GetUsageByHourTotalsResponseSchema, { hours });
    },
    async getUsageByCountry(request, context) {
      const countries = await reader.usageByCountry(projectOf(context), filterOf(request, context));
      return create(GetUsageByCountryResponseSchema, { countries });
    },
    async getTrace(request, context) {
      const trace = await reader.getTrace(projectOf(context), request.id, keptSince(context));
      // Another account's trace is as unknown as one that never existed.
      if (!trace) throw new ConnectError(`no trace with id ${JSON.stringify(request.id)}`, Code.NotFound);
      return create(GetTraceResponseSchema, { trace });
    },
    async getUsageByGroup(request, context) {
      const dimension = groupDimension(request.dimension, request.metadataKey);
      try {
        const { groups, totalGroups, wholeDays } = await reader.usageByGroup(
          projectOf(context),
          filterOf(request, context),
          dimension,
          request.limit || defaultGroupLimit,
        );
        return create(GetUsageByGroupResponseSchema, { groups, totalGroups: BigInt(totalGroups), wholeDays });
      } catch (error) {
        if (error instanceof TooManyGroupsError) throw new ConnectError(error.message, Code.ResourceExhausted);
        throw error;
      }
    },
    async getUsageByGroupAndDay(request, context) {
      const dimension = groupDimension(request.dimension, request.metadataKey);
      const days = await reader.usageByGroupAndDay(projectOf(context), filterOf(request, context), dimension, request.values, request.other);
      return create(GetUsageByGroupAndDayResponseSchema, { days });
    },
    async getLatencyHistogram(request, context) {
      const buckets = await reader.latencyHistogram(projectOf(context), filterOf(request, context));
      return create(GetLatencyHistogramResponseSchema, { buckets });
    },
    async getErrorGroups(request, context) {
      const { groups, totalErrors, totalGroups } = await reader.errorGroups(
        projectOf(context),
        filterOf(request, context),
        request.limit || defaultErrorGroups,
      );
      return create(GetErrorGroupsResponseSchema, { groups, totalErrors: BigInt(totalErrors), totalGroups: BigInt(totalGroups) });
    },
    async listRuns(request, context) {
      const order = request.order === RunOrder.COST ? "cost" : "recent";
      const runs = await reader.listRuns(projectOf(context), filterOf(request, context), order, request.limit || defaultRuns);
      return create(ListRunsResponseSchema, { runs });
    },
    async getRun(request, context) {
      const detail = await reader.getRun(projectOf(context), request.id, keptSince(context));
      // Another project's run is as unknown as one that never existed.
      if (!detail) throw new ConnectError(`no run with id ${JSON.stringify(request.id)}`, Code.NotFound);
      return create(GetRunResponseSchema, detail);
    },
  };
}
