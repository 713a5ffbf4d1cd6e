import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Refuses a browser request sent from another site: its Origin names another host, or the
 * browser marks it cross-site. Requests without either header come from tools, not from pages,
 * and carry no ambient cookies an attacker could borrow, so they pass.
 */
export function assertSameOrigin(header: Headers, requestUrl: string): void {
  const origin = header.get("origin");
  const crossSite = header.get("sec-fetch-site") === "cross-site";
  let foreign = false;
  if (origin !== null) {
    try {
      foreign = new URL(origin).host !== new URL(requestUrl).host;
    } catch {
      foreign = true; // "null" and other opaque origins
    }
  }
  if (foreign || crossSite) throw new ConnectError("cross-site request refused", Code.PermissionDenied);
}
