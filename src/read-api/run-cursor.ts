import { parseRunId } from "../store/run-id.js";
import type { RunsAfter } from "../store/run-summary.js";
import { InvalidCursorError } from "../store/trace-cursor.js";

/** A page of runs' next_cursor: base64url of the JSON `[<end in ms>, "<run id>"]` of its last run. */
export function encodeRunCursor(after: RunsAfter): string {
  return Buffer.from(JSON.stringify([after.endMs, after.id])).toString("base64url");
}

/** The run a cursor names; InvalidCursorError (400) for one this service did not hand out. */
export function decodeRunCursor(cursor: string): RunsAfter {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, "base64url").toString());
  } catch {
    throw new InvalidCursorError();
  }
  const [endMs, id] = Array.isArray(decoded) && decoded.length === 2 ? decoded : [];
  if (!Number.isSafeInteger(endMs) || typeof id !== "string" || !parseRunId(id)) throw new InvalidCursorError();
  return { endMs, id };
}
