import type { IncomingHttpHeaders } from "node:http";

/**
 * The client's address: the socket's peer, or, when the service sits behind one trusted proxy
 * (TRUST_PROXY), the last address that proxy appended to X-Forwarded-For. Earlier entries are
 * the client's own claims and are not trusted.
 */
export function clientAddress(headers: IncomingHttpHeaders, socketAddress: string | undefined, trustProxy: boolean): string | undefined {
  if (trustProxy) {
    const forwarded = headers["x-forwarded-for"];
    const last = (Array.isArray(forwarded) ? forwarded.join(",") : forwarded)?.split(",").pop()?.trim();
    if (last) return last;
  }
  return socketAddress;
}
