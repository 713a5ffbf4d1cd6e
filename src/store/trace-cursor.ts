/** Where a page of traces ends: the last trace's receive time and id (keyset pagination, newest first). */
export interface TraceCursor {
  receivedAtMs: number;
  id: string;
}

/** A cursor that this service did not hand out, or that was altered. */
export class InvalidCursorError extends Error {
  constructor() {
    super("cursor is not valid");
  }
}

/** The opaque form of a cursor: base64url of `<ms>.<id>`. */
export function encodeTraceCursor(cursor: TraceCursor): string {
  return Buffer.from(`${cursor.receivedAtMs}.${cursor.id}`).toString("base64url");
}

export function decodeTraceCursor(text: string): TraceCursor {
  const match = /^(\d{1,16})\.([0-9A-Za-z_-]{1,64})$/.exec(Buffer.from(text, "base64url").toString());
  if (!match) throw new InvalidCursorError();
  return { receivedAtMs: Number(match[1]), id: match[2]! };
}

/** Page sizes are kept between 1 and this, whatever the caller asks. */
export const maxPageSize = 1000;

export function clampPageSize(pageSize: number): number {
  return Math.min(maxPageSize, Math.max(1, Math.trunc(pageSize) || 1));
}
