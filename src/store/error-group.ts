import { createHash } from "node:crypto";

/** The group of the calls past the cap of error groups per project and day (error-group-cap.ts). */
export const otherErrorGroup = "other";
/** The message shown for a failed call that sent no error text. */
export const noMessage = "(no message)";
/** Longest masked message kept: the rest of a long message rarely tells two failures apart. */
const maxMessageLength = 300;

/**
 * What varies between two failures of the same kind, masked in order: quoted values first (they
 * may hold anything below), then e-mail addresses, UUIDs, ids (long tokens with a digit, or
 * mixed-case ones, unless all hex), hex, and finally any number left.
 */
const masks: [pattern: RegExp, mask: string][] = [
  [/"[^"]*"|'[^'\s][^']*'|`[^`]*`/g, "<str>"],
  [/[\w.+-]+@[\w-]+(\.[\w-]+)+/g, "<email>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>"],
  [/\b(?![0-9a-fA-F]+\b)(?=[\w-]*\d)(?:[\w-]{20,}|(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[\w-]{8,})\b/g, "<id>"],
  [/\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, "<hex>"],
  [/\d+(?:\.\d+)?/g, "<num>"],
];

/** A failed call's error with what varies between occurrences masked: what its group is named by. */
export function normaliseError(error: string | null | undefined): string {
  let text = error ?? "";
  for (const [pattern, mask] of masks) text = text.replace(pattern, mask);
  text = text.replace(/\s+/g, " ").trim();
  if (text === "") return noMessage;
  return text.length > maxMessageLength ? `${text.slice(0, maxMessageLength - 1)}…` : text;
}

/** The id of a masked message's group: 16 hex digits of its SHA-256. */
export function errorGroupId(masked: string): string {
  return createHash("sha256").update(masked).digest("hex").slice(0, 16);
}

/** The group of a failed call's error. */
export function errorGroupOf(error: string | null | undefined): { id: string; message: string } {
  const message = normaliseError(error);
  return { id: errorGroupId(message), message };
}
