import type { Interceptor } from "@connectrpc/connect";
import { assertSameOrigin } from "./same-origin.js";
import { signedInKey, type Sessions } from "./sessions.js";

/**
 * Guards the services that act for a signed-in user: same-origin, a live session, and the
 * session's CSRF token in the header. The user lands in the call's context (signedInKey),
 * which is the only place the services take the account from.
 */
export function sessionInterceptor(sessions: Sessions): Interceptor {
  return (next) => async (req) => {
    assertSameOrigin(req.header, req.url);
    req.contextValues.set(signedInKey, await sessions.authenticate(req.header, true));
    return next(req);
  };
}
