import { type DescField, type DescMessage, getOption, isFieldSet, type Message, ScalarType } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { celEnv, parse, plan } from "@bufbuild/cel";
import type { Expr } from "@bufbuild/cel-spec/cel/expr/syntax_pb.js";
import {
  type DoubleRules,
  DoubleRulesSchema,
  type FieldRules,
  FieldRulesSchema,
  type Int32Rules,
  MapRulesSchema,
  RepeatedRulesSchema,
  Int32RulesSchema,
  type StringRules,
  StringRulesSchema,
  field as fieldRulesOption,
  message as messageRulesOption,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/** True only for a message protovalidate would find valid; false means "ask protovalidate". */
export type QuickValidity = (message: Message) => boolean;

type Check = (message: Message) => boolean;
type ValueCheck = (value: unknown) => boolean;
type TypedRules = { case: "string"; value: StringRules } | { case: "int32"; value: Int32Rules } | { case: "double"; value: DoubleRules };

/** The standard rules compiled here, by rule type; `example` only documents. Anything else makes the check always defer. */
const compilable = {
  string: { schema: StringRulesSchema, rules: ["in", "max_len", "pattern", "example"] },
  int32: { schema: Int32RulesSchema, rules: ["gte", "lte", "example"] },
  double: { schema: DoubleRulesSchema, rules: ["gte", "lte", "finite", "example"] },
} as const;

/**
 * Compiles a message's protovalidate rules once into plain checks. protovalidate's evaluator
 * walks reflection, cursors and paths for every field of every message, which made it the
 * largest single cost of accepting a trace. The quick check only ever says "valid": when a check
 * fails, or the message has a rule kind not compiled here, it defers, and protovalidate decides
 * and words the violations. Message-level CEL rules are planned once with the CEL library
 * protovalidate itself uses.
 */
export function compileQuickValidity(schema: DescMessage): QuickValidity {
  const defer: QuickValidity = () => false;
  if (schema.oneofs.length > 0) return defer;
  const checks: Check[] = [];
  for (const field of schema.fields) {
    const check = fieldCheck(field);
    if (check === undefined) return defer;
    if (check !== null) checks.push(check);
  }
  const messageRules = getOption(schema, messageRulesOption);
  if (messageRules.oneof.length > 0) return defer;
  const env = celEnv({});
  for (const rule of messageRules.cel) {
    // A rule `a || b || c` passes when one of its terms does, so each term is planned and
    // remembered on its own: a term that reads only rarely set fields (`!has(this.x)`) is then
    // answered from memory even where another term reads a field whose values never repeat.
    const terms = disjuncts(parse(rule.expression).expr).map((expr): Check => {
      const program = plan(env, expr);
      const passes: Check = (message) => program({ this: reflect(schema, message) }) === true;
      return remembered(schema, expr, passes) ?? passes;
    });
    checks.push(terms.length === 1 ? terms[0]! : (message) => terms.some((term) => term(message)));
  }
  return (message) => {
    for (const check of checks) if (!check(message)) return false;
    return true;
  };
}

/** Well-known messages that carry no protovalidate rules of their own. */
const ruleFreeMessages = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration"]);

/** One field's checks; null when it has no rules, undefined when it has rules not compiled here. */
function fieldCheck(field: DescField): Check | null | undefined {
  const rules = getOption(field, fieldRulesOption);
  const ruleNames = setFieldNames(FieldRulesSchema, rules);
  if (field.fieldKind === "list" || field.fieldKind === "map") return collectionCheck(field, rules, ruleNames);
  // A timestamp without rules (Trace.called_at, bounded by the pipeline instead): nothing inside it to check.
  if (field.fieldKind === "message" && ruleNames.length === 0 && ruleFreeMessages.has(field.message.typeName)) return null;
  // Other message and enum fields: protovalidate also looks inside them.
  if (field.fieldKind !== "scalar") return undefined;
  if (ruleNames.length === 0) return null;
  if (ruleNames.some((name) => name !== "required" && name !== rules.type.case)) return undefined;
  const valueChecks = valueChecksOf(rules);
  if (valueChecks === undefined) return undefined;
  const name = field.localName;
  const optional = field.presence === FeatureSet_FieldPresence.EXPLICIT;
  return (message) => {
    // Unset: `required` fails; other rules are skipped for a field with presence, but apply to
    // the zero value of one without (rare: left to protovalidate).
    if (!isFieldSet(message, field)) return !rules.required && (optional || valueChecks.length === 0);
    const value = (message as unknown as Record<string, unknown>)[name];
    for (const check of valueChecks) if (!check(value)) return false;
    return true;
  };
}

/** The checks of a scalar's type rules (`string`, `int32`, `double`); undefined when one is not compiled here. */
function valueChecksOf(rules: FieldRules): ValueCheck[] | undefined {
  const typed = rules.type;
  if (typed.case === undefined) return [];
  if (!(typed.case in compilable)) return undefined;
  const kind = compilable[typed.case as keyof typeof compilable];
  const allowed: readonly string[] = kind.rules;
  const set = setFieldNames(kind.schema, typed.value as Message);
  if (set.some((name) => !allowed.includes(name))) return undefined;
  return typedChecks(typed as TypedRules, set);
}

/**
 * A list of scalars (`repeated.max_items`, `items`) or a map of scalars (`map.max_pairs`, `keys`,
 * `values`). An empty one, the usual case, passes at once.
 */
function collectionCheck(
  field: DescField & { fieldKind: "list" | "map" },
  rules: FieldRules,
  ruleNames: string[],
): Check | null | undefined {
  if ((field.fieldKind === "list" ? field.listKind : field.mapKind) !== "scalar") return undefined;
  if (ruleNames.length === 0) return null;
  const typed = rules.type;
  if (ruleNames.length !== 1 || (typed.case !== "repeated" && typed.case !== "map")) return undefined;
  const name = field.localName;
  if (typed.case === "repeated") {
    const set = setFieldNames(RepeatedRulesSchema, typed.value);
    if (set.some((rule) => rule !== "max_items" && rule !== "items")) return undefined;
    const items = set.includes("items") ? elementChecks(typed.value.items) : [];
    if (items === undefined) return undefined;
    const most = set.includes("max_items") ? Number(typed.value.maxItems) : Number.POSITIVE_INFINITY;
    return (message) => {
      const list = (message as unknown as Record<string, unknown[]>)[name]!;
      return list.length === 0 || (list.length <= most && list.every((item) => items.every((check) => check(item))));
    };
  }
  const set = setFieldNames(MapRulesSchema, typed.value);
  if (set.some((rule) => rule !== "max_pairs" && rule !== "keys" && rule !== "values")) return undefined;
  const keys = set.includes("keys") ? elementChecks(typed.value.keys) : [];
  const values = set.includes("values") ? elementChecks(typed.value.values) : [];
  if (keys === undefined || values === undefined) return undefined;
  const most = set.includes("max_pairs") ? Number(typed.value.maxPairs) : Number.POSITIVE_INFINITY;
  return (message) => {
    const map = (message as unknown as Record<string, Record<string, unknown>>)[name]!;
    let pairs = 0;
    for (const key in map) {
      if (++pairs > most || !keys.every((check) => check(key)) || !values.every((check) => check(map[key]))) return false;
    }
    return true;
  };
}

/** The checks of a list's items or a map's keys or values: type rules only. */
function elementChecks(rules: FieldRules | undefined): ValueCheck[] | undefined {
  if (rules === undefined) return [];
  const set = setFieldNames(FieldRulesSchema, rules);
  if (set.some((name) => name !== rules.type.case)) return undefined;
  return valueChecksOf(rules);
}

/** The checks of a field's type rules, given which of them are set (proto2 rule fields read as defaults when unset). */
function typedChecks(typed: TypedRules, set: string[]): ValueCheck[] {
  const checks: ValueCheck[] = [];
  if (typed.case === "string") {
    const { in: allowed, maxLen } = typed.value;
    if (set.includes("in")) checks.push((v) => allowed.includes(v as string));
    // max_len counts code points: a string no longer than that in UTF-16 units is surely within it.
    if (set.includes("max_len")) checks.push((v) => (v as string).length <= Number(maxLen));
    // The contract's patterns are plain character classes, which RE2 and JavaScript read alike.
    if (set.includes("pattern")) {
      const pattern = new RegExp(typed.value.pattern, "u");
      checks.push((v) => pattern.test(v as string));
    }
    return checks;
  }
  const { greaterThan, lessThan } = typed.value;
  if (typed.case === "double" && set.includes("finite") && typed.value.finite) checks.push((v) => Number.isFinite(v));
  if (greaterThan.case === "gte") checks.push((v) => (v as number) >= greaterThan.value);
  if (lessThan.case === "lte") checks.push((v) => (v as number) <= lessThan.value);
  return checks;
}

/** The terms of a top-level `||` chain, or the expression itself. */
function disjuncts(expr: Expr | undefined): Expr[] {
  if (expr === undefined) return [];
  const kind = expr.exprKind;
  if (kind.case === "callExpr" && kind.value.function === "_||_" && kind.value.target === undefined)
    return kind.value.args.flatMap(disjuncts);
  return [expr];
}

/** Results remembered per rule; past this many distinct inputs the memory starts over. */
const rememberedResults = 1024;
/** Inputs longer than this (as a key, in characters) are evaluated every time. */
const longestRememberedKey = 512;

/**
 * A CEL rule's check that remembers its result for each combination of the fields it reads: a
 * rule is a pure function of `this`, and the fields it reads usually take a handful of values
 * (`status`, whether `error` is set), while interpreting it costs more than the rest of the
 * checks together. Undefined when the result could depend on anything else (`this` as a whole,
 * `now`, a message or bytes field).
 */
function remembered(schema: DescMessage, expr: Expr, passes: Check): Check | undefined {
  const names = new Set<string>();
  if (!readsOnlyFields(expr, names)) return undefined;
  const fields: DescField[] = [];
  for (const name of names) {
    const field = schema.fields.find((f) => f.name === name);
    if (field?.fieldKind !== "scalar" || field.scalar === ScalarType.BYTES) return undefined;
    fields.push(field);
  }
  const results = new Map<string, boolean>();
  return (message) => {
    let key = "";
    for (const field of fields) {
      const value = isFieldSet(message, field) ? (message as unknown as Record<string, unknown>)[field.localName] : undefined;
      key += value === undefined ? "-," : `${valueKey(value)},`;
    }
    // A long value (an error message of kilobytes) is rarely repeated: not worth its memory.
    if (key.length > longestRememberedKey) return passes(message);
    let result = results.get(key);
    if (result === undefined) {
      result = passes(message);
      if (results.size >= rememberedResults) results.clear();
      results.set(key, result);
    }
    return result;
  };
}

/** A scalar as an unambiguous key part: strings quoted (so separators inside cannot collide), -0 apart from 0. */
function valueKey(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Object.is(value, -0)) return "number:-0";
  return `${typeof value}:${String(value)}`;
}

/** Collects the fields of `this` an expression selects; false when it also reads anything else of the message or the clock. */
function readsOnlyFields(expr: Expr | undefined, into: Set<string>): boolean {
  if (expr === undefined) return true;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "constExpr":
      return true;
    case "identExpr":
      return kind.value.name !== "this" && kind.value.name !== "now";
    case "selectExpr": {
      const operand = kind.value.operand;
      if (operand?.exprKind.case === "identExpr" && operand.exprKind.value.name === "this") {
        into.add(kind.value.field);
        return true;
      }
      return readsOnlyFields(operand, into);
    }
    case "callExpr":
      return readsOnlyFields(kind.value.target, into) && kind.value.args.every((arg) => readsOnlyFields(arg, into));
    case "listExpr":
      return kind.value.elements.every((element) => readsOnlyFields(element, into));
    case "structExpr":
      return kind.value.entries.every(
        (entry) => (entry.keyKind.case !== "mapKey" || readsOnlyFields(entry.keyKind.value, into)) && readsOnlyFields(entry.value, into),
      );
    case "comprehensionExpr": {
      const c = kind.value;
      if ([c.iterVar, c.iterVar2, c.accuVar].includes("this")) return false;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].every((e) => readsOnlyFields(e, into));
    }
    default:
      return false;
  }
}

function setFieldNames(schema: DescMessage, message: Message): string[] {
  return schema.fields.filter((f) => isFieldSet(message, f)).map((f) => f.name);
}
