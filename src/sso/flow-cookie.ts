import { createHmac, timingSafeEqual } from "node:crypto";
import { readCookie, setCookie } from "../dashboard/cookies.js";

/** What the callback must check against: kept in the browser that started the sign-in, signed by us. */
export interface Flow {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The redirect_uri sent to the provider; the token request must repeat it exactly. */
  redirectUri: string;
  /** Milliseconds since the epoch after which the flow is refused. */
  expiresAt: number;
}

export const flowCookie = "ct_oidc";
/** Long enough to sign in at the provider, short enough that a forgotten tab cannot be finished later. */
export const flowLifetimeSeconds = 600;
const flowPath = "/auth/oidc/";

/**
 * The sign-in flow's state, nonce and PKCE verifier travel in an HttpOnly cookie signed with a
 * key derived from the client secret, so every worker and instance can check it without shared
 * memory, and a browser can only finish the sign-in it started (D51).
 */
export function flowCookies(clientSecret: string, now: () => number = Date.now) {
  const key = createHmac("sha256", clientSecret).update("calltrace oidc flow cookie").digest();
  const sign = (payload: string) => createHmac("sha256", key).update(payload).digest("base64url");

  return {
    /** The Set-Cookie value that keeps `flow` in the browser (SameSite=Lax: it must come back on the provider's redirect). */
    set(flow: Omit<Flow, "expiresAt">, secure: boolean): string {
      const payload = Buffer.from(JSON.stringify({ ...flow, expiresAt: now() + flowLifetimeSeconds * 1000 })).toString("base64url");
      return setCookie(flowCookie, `${payload}.${sign(payload)}`, {
        maxAge: flowLifetimeSeconds,
        httpOnly: true,
        secure,
        sameSite: "Lax",
        path: flowPath,
      });
    },
    /** The flow this browser started, undefined when the cookie is missing, forged or expired. */
    read(cookieHeader: string | undefined): Flow | undefined {
      const value = readCookie(cookieHeader, flowCookie);
      const dot = value?.indexOf(".") ?? -1;
      if (!value || dot < 0) return undefined;
      const payload = value.slice(0, dot);
      const given = Buffer.from(value.slice(dot + 1));
      const expected = Buffer.from(sign(payload));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      const flow = JSON.parse(Buffer.from(payload, "base64url").toString()) as Flow;
      return flow.expiresAt > now() ? flow : undefined;
    },
    /** Forgets the flow: a finished or failed sign-in cannot be finished again from this browser. */
    clear(secure: boolean): string {
      return setCookie(flowCookie, "", { maxAge: 0, httpOnly: true, secure, sameSite: "Lax", path: flowPath });
    },
  };
}

export type FlowCookies = ReturnType<typeof flowCookies>;
