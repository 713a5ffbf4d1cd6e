import { type DescField, type DescMessage, getOption, isFieldSet, type Message } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { celEnv, parse, plan } from "@bufbuild/cel";
import {
  type DoubleRules,
  DoubleRulesSchema,
  FieldRulesSchema,
  type Int32Rules,
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
  string: { schema: StringRulesSchema, rules: ["in", "max_len", "example"] },
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
  if (messageRules.cel.length > 0) {
    const env = celEnv({});
    const programs = messageRules.cel.map((rule) => plan(env, parse(rule.expression)));
    checks.push((message) => {
      const self = reflect(schema, message);
      return programs.every((program) => program({ this: self }) === true);
    });
  }
  return (message) => {
    for (const check of checks) if (!check(message)) return false;
    return true;
  };
}

/** One field's checks; null when it has no rules, undefined when it has rules not compiled here. */
function fieldCheck(field: DescField): Check | null | undefined {
  const rules = getOption(field, fieldRulesOption);
  const ruleNames = setFieldNames(FieldRulesSchema, rules);
  // Message, enum, list and map fields: protovalidate also looks inside them.
  if (field.fieldKind !== "scalar") return undefined;
  if (ruleNames.length === 0) return null;
  const typed = rules.type;
  if (ruleNames.some((name) => name !== "required" && name !== typed.case)) return undefined;
  const valueChecks: ValueCheck[] = [];
  if (typed.case !== undefined) {
    if (!(typed.case in compilable)) return undefined;
    const kind = compilable[typed.case as keyof typeof compilable];
    const allowed: readonly string[] = kind.rules;
    const set = setFieldNames(kind.schema, typed.value as Message);
    if (set.some((name) => !allowed.includes(name))) return undefined;
    valueChecks.push(...typedChecks(typed as TypedRules, set));
  }
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

/** The checks of a field's type rules, given which of them are set (proto2 rule fields read as defaults when unset). */
function typedChecks(typed: TypedRules, set: string[]): ValueCheck[] {
  const checks: ValueCheck[] = [];
  if (typed.case === "string") {
    const { in: allowed, maxLen } = typed.value;
    if (set.includes("in")) checks.push((v) => allowed.includes(v as string));
    // max_len counts code points: a string no longer than that in UTF-16 units is surely within it.
    if (set.includes("max_len")) checks.push((v) => (v as string).length <= Number(maxLen));
    return checks;
  }
  const { greaterThan, lessThan } = typed.value;
  if (typed.case === "double" && set.includes("finite") && typed.value.finite) checks.push((v) => Number.isFinite(v));
  if (greaterThan.case === "gte") checks.push((v) => (v as number) >= greaterThan.value);
  if (lessThan.case === "lte") checks.push((v) => (v as number) <= lessThan.value);
  return checks;
}

function setFieldNames(schema: DescMessage, message: Message): string[] {
  return schema.fields.filter((f) => isFieldSet(message, f)).map((f) => f.name);
}
