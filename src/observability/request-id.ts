import { randomUUID } from "node:crypto";

/** What a client may send as its own request id: short, and safe to echo in a header and a log line. */
const acceptable = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's X-Request-Id when it is acceptable, otherwise a new random one. */
export function requestIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && acceptable.test(value) ? value : randomUUID();
}
