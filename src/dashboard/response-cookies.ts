import type { HandlerContext } from "@connectrpc/connect";

/** Adds Set-Cookie headers to a call's response. */
export function setCookies(context: HandlerContext, cookies: string[]): void {
  for (const cookie of cookies) context.responseHeader.append("set-cookie", cookie);
}
