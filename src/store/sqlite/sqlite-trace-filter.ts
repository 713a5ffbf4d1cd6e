import type { GroupDimension } from "../group-dimension.js";
import type { ResolvedTraceFilter } from "../trace-filter.js";
import { idOf, numberOf } from "./sqlite-id-numbers.js";
import { distinctTagsJoin } from "./sqlite-attribute-sets.js";

/** The rows of the project in @account, in the tables that name it by number (D65): the traces, group_daily and runs. */
export const projectIs = `project_num = ${numberOf("@account")}`;

/** The filters whose traces index narrows a page more than the index of failed calls. */
const narrowerIndexFields = ["keyId", "model", "userId", "sessionId", "otlpTraceId"] as const;

/** Columns filtered by equality, the same in the traces table and the roll-ups of key, provider, model and status. */
export const rollupFilterColumns = [
  ["keyId", "key_id"],
  ["provider", "provider"],
  ["model", "model"],
  ["status", "status"],
] as const;

/** The traces table's columns of the filters it stores by number (D65, D68). */
const numberedColumns: Partial<Record<(typeof rollupFilterColumns)[number][0], string>> = {
  keyId: "key_num",
  provider: "provider_num",
  model: "model_num",
};

const attributeColumns = [
  ["userId", "user_id"],
  ["sessionId", "session_id"],
  ["environment", "environment"],
  ["otlpTraceId", "otlp_trace_id"],
  ["errorGroup", "error_group"],
] as const;

/** The service of a trace: the OTLP resource's service.name, or else its metadata entry `service`. */
export const serviceSql = "COALESCE(traces.service_name, json_extract(traces.metadata, '$.service'))";

/** A JSON path naming one metadata key (keys are `[A-Za-z0-9_.-]+`, so quoting them is enough). */
export const metadataPath = (key: string) => `$."${key}"`;

/** A LIKE pattern matching `text` anywhere (LIKE ignores ASCII case; % and _ in the text match themselves). */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The traces index of each filter whose index narrows a page to its value, in the order one is chosen. */
const filterIndexes = [
  ["otlpTraceId", "traces_account_otlp_trace"],
  ["sessionId", "traces_account_session_received"],
  ["userId", "traces_account_user_received"],
  ["errorGroup", "traces_account_error_group"],
  ["keyId", "traces_account_key_received"],
  ["model", "traces_account_model_received"],
] as const;

/**
 * The traces table as a read of `filter` names it: INDEXED BY the index of its narrowest filter.
 * Without statistics (no ANALYZE), SQLite ranges over the project's time index and checks the
 * filter per row, reading every trace of the range for one user's page (D65).
 */
export function tracesFor(filter: ResolvedTraceFilter): string {
  const chosen = filterIndexes.find(([field]) => filter[field] !== undefined);
  return chosen ? `traces INDEXED BY ${chosen[1]}` : "traces";
}

/**
 * The conditions of a filter on the traces table (after `projectIs`), or on a roll-up (after
 * `account_id = @account`), each starting with AND; their parameters are added to `params`. Tags
 * and metadata are read from the row's JSON, so they need no table of their own: the indexes of
 * the other columns narrow the rows first.
 */
export function traceConditions(filter: ResolvedTraceFilter, params: Record<string, unknown>, columns: "all" | "rollup" = "all"): string {
  let sql = "";
  for (const [field, column] of rollupFilterColumns) {
    if (filter[field] === undefined) continue;
    if (columns === "all" && field === "status" && filter.status === "error") {
      // Only failed calls have an error group, and its index narrows further: no condition.
      if (filter.errorGroup !== undefined) continue;
      // Written out, so that SQLite sees the traces' index of failed calls answers it, unless an
      // index of another filter (key, model, user, session, OTLP trace) narrows first.
      if (narrowerIndexFields.every((f) => filter[f] === undefined)) {
        sql += " AND status = 'error'";
        continue;
      }
    }
    params[field] = filter[field];
    const numbered = columns === "all" ? numberedColumns[field] : undefined;
    sql += numbered ? ` AND ${numbered} = ${numberOf(`@${field}`)}` : ` AND ${column} = @${field}`;
  }
  // The roll-ups of provider and model hold the model too: a name match reads them as the traces' numbers of the names that match.
  if (filter.modelContains !== undefined) {
    params.modelLike = containing(filter.modelContains);
    const like = "LIKE @modelLike ESCAPE '\\'";
    sql += columns === "all" ? ` AND model_num IN (SELECT num FROM id_numbers WHERE id ${like})` : ` AND model ${like}`;
  }
  if (columns === "rollup") return sql;
  for (const [field, column] of attributeColumns) {
    if (filter[field] === undefined) continue;
    params[field] = filter[field];
    sql += ` AND ${column} = @${field}`;
  }
  if (filter.service !== undefined) {
    params.service = filter.service;
    sql += ` AND ${serviceSql} = @service`;
  }
  filter.tags.forEach((tag, i) => {
    params[`tag${i}`] = tag;
    sql += ` AND EXISTS (SELECT 1 FROM json_each(traces.tags) WHERE value = @tag${i})`;
  });
  filter.metadata.forEach(([key, value], i) => {
    params[`metaPath${i}`] = metadataPath(key);
    params[`metaValue${i}`] = value;
    sql += ` AND json_extract(traces.metadata, @metaPath${i}) = @metaValue${i}`;
  });
  if (filter.errorContains !== undefined) {
    params.errorLike = containing(filter.errorContains);
    sql += ` AND error LIKE @errorLike ESCAPE '\\'`;
  }
  return sql;
}

/**
 * How to read a dimension's value from the traces table: the expression (never NULL: the empty
 * string for traces without a value), and the join it needs for list-valued dimensions. `json`:
 * the table whose `tags` and `metadata` columns hold the JSON (a table of sets, D83 and D86).
 */
export function groupExpression(
  dimension: GroupDimension,
  params: Record<string, unknown>,
  json = "traces",
): { value: string; join: string } {
  switch (dimension.kind) {
    case "user":
      return { value: "COALESCE(user_id, '')", join: "" };
    case "session":
      return { value: "COALESCE(session_id, '')", join: "" };
    case "environment":
      return { value: "COALESCE(environment, '')", join: "" };
    case "service":
      return { value: `COALESCE(${serviceSql}, '')`, join: "" };
    case "key":
      return { value: idOf("key_num"), join: "" };
    case "provider":
      return { value: idOf("provider_num"), join: "" };
    case "model":
      return { value: idOf("model_num"), join: "" };
    case "metadata":
      params.groupPath = metadataPath(dimension.key);
      return { value: `COALESCE(json_extract(${json}.metadata, @groupPath), '')`, join: "" };
    case "metadataKey":
      return { value: "COALESCE(entry.key, '')", join: ` LEFT JOIN json_each(${json}.metadata) AS entry` };
    case "tag":
      return { value: "COALESCE(entry.value, '')", join: distinctTagsJoin(`${json}.tags`) };
  }
}
