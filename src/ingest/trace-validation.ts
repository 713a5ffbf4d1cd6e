import type { DescField } from "@bufbuild/protobuf";
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
  return [
    ...unencodable,
    ...result.violations.map((v) => {
      const field = v.field.map((f) => (f as DescField).name ?? String(f)).join(".");
      return { field, problem: friendlier(v.message) };
    }),
  ];
}

/** A lone UTF-16 surrogate (only reachable through a JSON `\ud800` escape) has no UTF-8 form: stores would each mangle it their own way. */
const loneSurrogate = /\p{Cs}/u;

function textProblems(trace: Trace): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const field of TraceSchema.fields) {
    const value = (trace as unknown as Record<string, unknown>)[field.localName];
    if (typeof value === "string" && loneSurrogate.test(value))
      problems.push({ field: field.name, problem: "must be valid Unicode text (a lone surrogate)" });
  }
  return problems;
}

/** Protovalidate's wording, made to read as D7's examples do. */
function friendlier(message: string): string {
  if (message === "value is required") return "is required";
  const list = /^must be in list \[(.*)\]$/.exec(message);
  return list ? `must be one of ${list[1]}` : message;
}

/** D7: every offending field and why, in one human-readable string, in the contract's field order. */
export function describeProblems(problems: FieldProblem[]): string {
  return [...problems]
    .sort((a, b) => (fieldOrder.get(a.field) ?? 99) - (fieldOrder.get(b.field) ?? 99))
    .map((p) => (p.field ? `${p.field}: ${p.problem}` : p.problem))
    .join("; ");
}
