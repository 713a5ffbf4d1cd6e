import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { signedInKey, type SignedIn } from "./sessions.js";

/** The caller, as the session interceptor established it; a service without the interceptor fails closed. */
export function signedIn(context: HandlerContext): SignedIn {
  const user = context.values.get(signedInKey);
  if (!user) throw new ConnectError("not signed in", Code.Unauthenticated);
  return user;
}
