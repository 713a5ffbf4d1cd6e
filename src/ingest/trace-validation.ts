import type { DescField } from "@bufbuild/protobuf";
import type { Path } from "@bufbuild/protobuf/reflect";
import { createValidator } from "@bufbuild/protovalidate";
import { TraceSchema, type Trace } from "../../gen/calltrace/v1/trace_pb.js";
import { compileQuickValidity } from "./quick-validity.js";

/** One thing wrong with one field, named as on the wire (snake_case). */
export interface FieldProblem {
  field: string;
  problem: string;
}

const validator = createValidator();
const surelyValid = compileQuickValidity(TraceSchema);
const fieldOrder = new Map(TraceSchema.fields.map((f, i) => [f.name, i]));

/** The violations of the contract's protovalidate rules (D5, D6), in field order. */
export function traceProblems(trace: Trace): FieldProblem[] {
  const unencodable = textProblems(trace);
  if (surelyValid(trace)) return unencodable;
  const result = validator.validate(TraceSchema, trace);
  if (result.kind === "valid") return unencodable;
  if (result.kind === "error") throw result.error;
  return [...unencodable, ...result.violations.map((v) => ({ field: pathName(v.field), problem: friendlier(v.message, v.forKey) }))];
}

/**
 * A submission's problems: those its edge found decoding it (wrong JSON types), then the rules'
 * for the rest. A field the edge could not decode is unset; its "is required" would only repeat it.
 */
export function submissionProblems(trace: Trace, decodeProblems: FieldProblem[] = []): FieldProblem[] {
  const problems = traceProblems(trace);
  if (decodeProblems.length === 0) return problems;
  const undecodable = new Set(decodeProblems.map((p) => p.field));
  return [...decodeProblems, ...problems.filter((p) => !undecodable.has(p.field))];
}

/** `tokens_in`, `tags[3]`, `metadata["team"]`: a violation's path as on the wire. */
function pathName(path: Path): string {
  let name = "";
  for (const part of path) {
    if ("kind" in part && part.kind === "list_sub") name += `[${part.index}]`;
    else if ("kind" in part && part.kind === "map_sub") name += `[${JSON.stringify(String(part.key))}]`;
    else name += (name ? "." : "") + (part as DescField).name;
  }
  return name;
}

/** A lone UTF-16 surrogate (only reachable through a JSON `\ud800` escape) has no UTF-8 form: stores would each mangle it their own way. */
const loneSurrogate = /\p{Cs}/u;

function textProblems(trace: Trace): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const field of TraceSchema.fields) {
    const value = (trace as unknown as Record<string, unknown>)[field.localName];
    if (typeof value === "string" ? loneSurrogate.test(value) : typeof value === "object" && value !== null && hasLoneSurrogate(value))
      problems.push({ field: field.name, problem: "must be valid Unicode text (a lone surrogate)" });
  }
  return problems;
}

/** In a list's strings, or a map's keys and values (walked in place: this runs for every trace). */
function hasLoneSurrogate(value: object): boolean {
  if (Array.isArray(value)) return value.some((text) => typeof text === "string" && loneSurrogate.test(text));
  for (const [key, text] of Object.entries(value)) {
    if (loneSurrogate.test(key) || (typeof text === "string" && loneSurrogate.test(text))) return true;
  }
  return false;
}

/** Protovalidate's wording, made to read as D7's examples do. */
function friendlier(message: string, forKey = false): string {
  if (message === "value is required") return "is required";
  if (forKey) return `key ${message}`;
  const list = /^must be in list \[(.*)\]$/.exec(message);
  return list ? `must be one of ${list[1]}` : message;
}

/** D7: every offending field and why, in one human-readable string, in the contract's field order. */
export function describeProblems(problems: FieldProblem[]): string {
  return inContractOrder(problems)
    .map((p) => (p.field ? `${p.field}: ${p.problem}` : p.problem))
    .join("; ");
}

/** The problems sorted by their field's place in the contract (unknown fields last). */
export function inContractOrder(problems: FieldProblem[]): FieldProblem[] {
  return [...problems].sort((a, b) => (fieldOrder.get(fieldOf(a)) ?? 99) - (fieldOrder.get(fieldOf(b)) ?? 99));
}

/** The top-level field a problem is about (`tags` for `tags[3]`). */
function fieldOf(problem: FieldProblem): string {
  return /^[a-z_]+/.exec(problem.field)?.[0] ?? problem.field;
}
