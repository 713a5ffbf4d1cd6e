import type { TraceAttributes } from "./attributes.js";

/** The request key a JavaScript caller may set; read and removed before the provider sees the request. */
export const REQUEST_KEY = "calltrace";
// What withCallAttributes() sets: a symbol never reaches the wire (JSON
// drops it), so a request stays valid with tracing off or not installed.
// Shared by every copy of this SDK in the process.
const CALL_ATTRIBUTES = Symbol.for("calltrace.callAttributes");

type Carrier = Record<string | symbol, unknown>;

/**
 * Returns a copy of `params` (a provider request, such as the body of
 * `chat.completions.create`) that carries `attributes` for that one call. The
 * copy has the same type, so the request stays fully typed:
 *
 *     await openai.chat.completions.create(withCallAttributes({ model, messages }, { userId: "u_42" }));
 *
 * The attributes are removed before the provider library sees the request.
 */
export function withCallAttributes<T extends object>(params: T, attributes: TraceAttributes): T {
  const copy: Carrier = { ...(params as Carrier), [CALL_ATTRIBUTES]: attributes };
  // @google/genai rebuilds a request with tools from its model, contents and
  // config only, so the attributes ride in its config too.
  const config = copy.config;
  if (config !== null && typeof config === "object" && !Array.isArray(config)) {
    copy.config = { ...(config as Carrier), [CALL_ATTRIBUTES]: attributes };
  }
  return copy as T;
}

/** Per-call attributes found in a request, and the request without them. */
export interface TakenAttributes {
  attributes: TraceAttributes;
  params: unknown;
}

/**
 * Takes the per-call attributes out of a request: from `withCallAttributes()`
 * or a `calltrace` key, at the top level or in `config` (Gemini). `undefined`
 * when there are none, which is the common case and allocates nothing. The
 * caller's object is never changed: the request without them is a copy.
 */
export function takeCallAttributes(params: unknown): TakenAttributes | undefined {
  if (params === null || typeof params !== "object") return undefined;
  const request = params as Carrier;
  const config = request.config as Carrier | undefined;
  const inConfig = config !== null && typeof config === "object" ? carried(config) : undefined;
  const atTop = carried(request);
  if (atTop === undefined && inConfig === undefined) return undefined;
  const stripped = strip(request);
  if (inConfig !== undefined) stripped.config = strip(config!);
  return { attributes: (atTop ?? inConfig) as TraceAttributes, params: stripped };
}

function carried(holder: Carrier): unknown {
  return holder[CALL_ATTRIBUTES] ?? holder[REQUEST_KEY];
}

function strip(holder: Carrier): Carrier {
  const { [CALL_ATTRIBUTES]: _symbol, [REQUEST_KEY]: _key, ...rest } = holder;
  return rest;
}
