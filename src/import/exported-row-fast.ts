import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { type StoredTrace, StoredTraceSchema, type Trace, TraceSchema } from "../../gen/calltrace/v1/trace_pb.js";

/** A field's value as the messages hold it, or `unread` where the fast path leaves the row to the generic one. */
const unread = Symbol("unread");
type Read = (value: unknown) => unknown;

const int32Max = 2147483647;
/** RFC 3339 in UTC as `traces export` writes it; offsets and other forms are left to the generic reader. */
const utcTimestamp = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;
const timestampMsMin = -62135596800000;
const timestampMsMax = 253402300799999;

function timestampOf(value: unknown): Timestamp | typeof unread {
  const m = typeof value === "string" ? utcTimestamp.exec(value) : null;
  if (!m) return unread;
  // As protobuf-es reads it: the whole seconds by Date.parse, the fraction as nanoseconds.
  const ms = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(ms) || ms < timestampMsMin || ms > timestampMsMax) return unread;
  const fraction = m[2] ?? "";
  return create(TimestampSchema, { seconds: BigInt(ms / 1000), nanos: fraction === "" ? 0 : Number(fraction.padEnd(9, "0")) });
}

/** The reading of one field, by the strict types of the API's reader (D5): anything else is `unread`. */
function readerOf(field: DescField): Read {
  switch (field.fieldKind) {
    case "scalar":
      if (field.scalar === ScalarType.STRING) return (v) => (typeof v === "string" ? v : unread);
      if (field.scalar === ScalarType.INT32)
        return (v) => (Number.isInteger(v) && (v as number) <= int32Max && (v as number) >= -int32Max - 1 ? v : unread);
      if (field.scalar === ScalarType.DOUBLE) return (v) => (typeof v === "number" ? v : unread);
      break;
    case "enum": {
      const numbers = new Map(field.enum.values.map((e) => [e.name, e.number]));
      return (v) => (typeof v === "string" ? (numbers.get(v) ?? unread) : unread);
    }
    case "message":
      if (field.message.typeName === TimestampSchema.typeName) return timestampOf;
      break;
    case "list":
      if (field.listKind === "scalar" && field.scalar === ScalarType.STRING)
        return (v) => (Array.isArray(v) && v.every((item) => typeof item === "string") ? [...v] : unread);
      break;
    case "map":
      if (field.mapKind === "scalar" && field.scalar === ScalarType.STRING)
        return (v) => {
          if (typeof v !== "object" || v === null || Array.isArray(v)) return unread;
          const map: Record<string, string> = {};
          for (const [key, item] of Object.entries(v)) {
            if (typeof item !== "string") return unread;
            map[key] = item;
          }
          return map;
        };
      break;
  }
  throw new Error(`exported-row-fast: no reading for field ${field.name}`);
}

const traceFieldNames = new Set(TraceSchema.fields.map((f) => f.name));
const fields = StoredTraceSchema.fields.map((field) => ({
  name: field.name,
  localName: field.localName,
  inTrace: traceFieldNames.has(field.name),
  read: readerOf(field),
}));
/** The generic reader also takes a StoredTrace field by its JSON name (`tokensIn`): rows that use one are left to it. */
const jsonNames = StoredTraceSchema.fields.filter((f) => f.jsonName !== f.name).map((f) => f.jsonName);

/**
 * A row as `traces export` writes it, read in one pass into the Trace the API's rules check and the
 * StoredTrace written, by the same strict types; undefined when anything is out of the ordinary
 * (a wrong type, an enum by number, a timestamp with an offset, a field by its JSON name), which
 * the generic reader then reads and words. The caller checks the Trace as the generic path does.
 */
export function fastExportedRow(row: Record<string, unknown>): { trace: Trace; stored: StoredTrace } | undefined {
  for (const name of jsonNames) if (row[name] !== undefined) return undefined;
  const trace = create(TraceSchema) as unknown as Record<string, unknown>;
  const stored = create(StoredTraceSchema) as unknown as Record<string, unknown>;
  for (const field of fields) {
    const value = row[field.name];
    if (value === undefined || value === null) continue;
    const read = field.read(value);
    if (read === unread) return undefined;
    stored[field.localName] = read;
    if (field.inTrace) trace[field.localName] = read;
  }
  return { trace: trace as unknown as Trace, stored: stored as unknown as StoredTrace };
}
