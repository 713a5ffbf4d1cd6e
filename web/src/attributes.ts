import { create } from "@bufbuild/protobuf";
import { Dimension, TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";

/**
 * Who and what a view is narrowed to, besides the time range, key, provider, model and status of
 * filters.ts: kept in the address bar (`user`, `session`, `tag`, `meta.<key>`, `env`, `service`,
 * `otlp`, `error_group`, and the searches `q` for model text and `error` for error text), so clicking a group on
 * one page narrows every page, and any view can be shared.
 */
export interface Attributes {
  userId: string;
  sessionId: string;
  tags: string[];
  metadata: Record<string, string>;
  environment: string;
  service: string;
  otlpTraceId: string;
  modelContains: string;
  errorContains: string;
  /** An error group's id (the Errors page links here with it). */
  errorGroup: string;
}

const metaPrefix = "meta.";

export function attributesFromQuery(query: URLSearchParams): Attributes {
  const metadata: Record<string, string> = {};
  for (const [name, value] of query) if (name.startsWith(metaPrefix) && value) metadata[name.slice(metaPrefix.length)] = value;
  return {
    userId: query.get("user") ?? "",
    sessionId: query.get("session") ?? "",
    tags: query.getAll("tag").filter((t) => t !== ""),
    metadata,
    environment: query.get("env") ?? "",
    service: query.get("service") ?? "",
    otlpTraceId: query.get("otlp") ?? "",
    modelContains: query.get("q") ?? "",
    errorContains: query.get("error") ?? "",
    errorGroup: query.get("error_group") ?? "",
  };
}

/** The address-bar form of these attributes, to append to a page's other parameters. */
export function attributesToQuery(a: Attributes): string {
  const q = new URLSearchParams();
  if (a.userId) q.set("user", a.userId);
  if (a.sessionId) q.set("session", a.sessionId);
  for (const tag of a.tags) q.append("tag", tag);
  for (const [key, value] of Object.entries(a.metadata)) q.set(metaPrefix + key, value);
  if (a.environment) q.set("env", a.environment);
  if (a.service) q.set("service", a.service);
  if (a.otlpTraceId) q.set("otlp", a.otlpTraceId);
  if (a.modelContains) q.set("q", a.modelContains);
  if (a.errorContains) q.set("error", a.errorContains);
  if (a.errorGroup) q.set("error_group", a.errorGroup);
  return q.toString();
}

/** Joins query strings, leaving out empty ones. */
export function joinQuery(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("&");
}

/** A TraceFilter narrowed further by these attributes. */
export function withAttributes(filter: TraceFilter, a: Attributes): TraceFilter {
  return create(TraceFilterSchema, {
    ...filter,
    userId: a.userId,
    sessionId: a.sessionId,
    tags: a.tags,
    metadata: a.metadata,
    environment: a.environment,
    service: a.service,
    otlpTraceId: a.otlpTraceId,
    // The search box and the filter bar's model box both search model names.
    modelContains: a.modelContains || filter.modelContains,
    errorContains: a.errorContains,
    errorGroup: a.errorGroup,
  });
}

/** One active attribute, as a removable chip says it. */
export interface AttributeChip {
  label: string;
  without: Attributes;
}

export function attributeChips(a: Attributes): AttributeChip[] {
  const chips: AttributeChip[] = [];
  const add = (label: string, patch: Partial<Attributes>) => chips.push({ label, without: { ...a, ...patch } });
  if (a.userId) add(`user: ${a.userId}`, { userId: "" });
  if (a.sessionId) add(`session: ${a.sessionId}`, { sessionId: "" });
  for (const tag of a.tags) add(`tag: ${tag}`, { tags: a.tags.filter((t) => t !== tag) });
  for (const key of Object.keys(a.metadata)) {
    const { [key]: _removed, ...rest } = a.metadata;
    add(`${key}: ${a.metadata[key]}`, { metadata: rest });
  }
  if (a.environment) add(`environment: ${a.environment}`, { environment: "" });
  if (a.service) add(`service: ${a.service}`, { service: "" });
  if (a.otlpTraceId) add(`OTLP trace: ${a.otlpTraceId.slice(0, 8)}…`, { otlpTraceId: "" });
  if (a.modelContains) add(`model contains: ${a.modelContains}`, { modelContains: "" });
  if (a.errorContains) add(`error contains: ${a.errorContains}`, { errorContains: "" });
  if (a.errorGroup) add(`error group: ${a.errorGroup}`, { errorGroup: "" });
  return chips;
}

/** What the Attribution page can group by, in the order offered. */
export const dimensions = [
  { id: "user", label: "User", proto: Dimension.USER },
  { id: "tag", label: "Tag", proto: Dimension.TAG },
  { id: "metadata", label: "Metadata key", proto: Dimension.METADATA },
  { id: "session", label: "Session", proto: Dimension.SESSION },
  { id: "environment", label: "Environment", proto: Dimension.ENVIRONMENT },
  { id: "service", label: "Service", proto: Dimension.SERVICE },
  { id: "key", label: "API key", proto: Dimension.KEY },
  { id: "provider", label: "Provider", proto: Dimension.PROVIDER },
  { id: "model", label: "Model", proto: Dimension.MODEL },
] as const;

export type DimensionId = (typeof dimensions)[number]["id"];

/**
 * The attributes narrowed to one group of a dimension, or undefined for the dimensions that are
 * filters.ts's own (key, provider, model) and for the empty group (traces without a value), which
 * no filter can select.
 */
export function attributesForGroup(a: Attributes, dimension: DimensionId, metadataKey: string, value: string): Attributes | undefined {
  if (value === "") return undefined;
  switch (dimension) {
    case "user":
      return { ...a, userId: value };
    case "session":
      return { ...a, sessionId: value };
    case "tag":
      return { ...a, tags: [...new Set([...a.tags, value])] };
    case "metadata":
      return { ...a, metadata: { ...a.metadata, [metadataKey]: value } };
    case "environment":
      return { ...a, environment: value };
    case "service":
      return { ...a, service: value };
    default:
      return undefined;
  }
}
