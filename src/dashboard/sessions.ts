import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import type { UserStore } from "../store/user-store.js";
import { readCookie, setCookie } from "./cookies.js";

/** The signed-in user behind a request. */
export interface SignedIn {
  userId: string;
  email: string;
  tokenHash: string;
}

/** Put into each authenticated call's context by the session interceptor. */
export const signedInKey = createContextKey<SignedIn | undefined>(undefined, { description: "signed-in user" });

export const sessionCookie = "ct_session";
export const csrfCookie = "ct_csrf";
export const csrfHeader = "x-csrf-token";

export interface SessionsOptions {
  /** How long a session lasts from log-in, in seconds. */
  ttlSeconds: number;
  now?: () => Date;
}

export interface Sessions {
  /** Starts a session for the user from a browser (its User-Agent); answers the two Set-Cookie values. */
  start(user: { id: string }, secure: boolean, userAgent?: string | null): Promise<string[]>;
  /**
   * The signed-in user of a request: UNAUTHENTICATED without a live session; with `requireCsrf`,
   * PERMISSION_DENIED unless the `x-csrf-token` header carries the session's CSRF token.
   */
  authenticate(header: Headers, requireCsrf: boolean): Promise<SignedIn>;
  /** Like authenticate, but undefined instead of an error. */
  find(header: Headers): Promise<SignedIn | undefined>;
  /** Ends the session; answers the Set-Cookie values that clear the cookies. */
  end(session: SignedIn, secure: boolean): Promise<string[]>;
  /** The Set-Cookie values that clear this browser's cookies. */
  clearCookies(secure: boolean): string[];
}

/** A session's public name: a digest of its token's digest, so it can be shown and still not be used. */
export function sessionIdOf(tokenHash: string): string {
  return sha256(`session id ${tokenHash}`).slice(0, 16);
}

const notSignedIn = () => new ConnectError("not signed in, or the session has expired", Code.Unauthenticated);

/**
 * Cookie sessions. The session token is 256 random bits, sent only in an HttpOnly cookie and
 * stored only as its SHA-256. The CSRF token is an HMAC of the session token: the page reads it
 * from a second cookie and echoes it in a header, which a cross-site attacker can neither read
 * nor forge (double submit, bound to the session so it cannot be planted).
 */
export function createSessions(users: UserStore, options: SessionsOptions): Sessions {
  const now = options.now ?? (() => new Date());

  async function find(header: Headers): Promise<{ signedIn: SignedIn; token: string } | undefined> {
    const token = readCookie(header.get("cookie"), sessionCookie);
    if (!token) return undefined;
    const tokenHash = sha256(token);
    const session = await users.findSession(tokenHash);
    if (!session) return undefined;
    if (session.expiresAt.getTime() <= now().getTime()) {
      await users.deleteSession(tokenHash);
      return undefined;
    }
    const user = await users.getUser(session.userId);
    if (!user) return undefined;
    return { signedIn: { userId: user.id, email: user.email, tokenHash }, token };
  }

  return {
    async start(user, secure, userAgent) {
      const token = randomBytes(32).toString("base64url");
      const createdAt = now();
      const expiresAt = new Date(createdAt.getTime() + options.ttlSeconds * 1000);
      await users.deleteExpiredSessions(createdAt);
      await users.createSession({
        tokenHash: sha256(token),
        userId: user.id,
        createdAt,
        expiresAt,
        userAgent: (userAgent ?? "").slice(0, 200),
      });
      return [
        setCookie(sessionCookie, token, { maxAge: options.ttlSeconds, httpOnly: true, secure }),
        setCookie(csrfCookie, csrfTokenOf(token), { maxAge: options.ttlSeconds, httpOnly: false, secure }),
      ];
    },
    async authenticate(header, requireCsrf) {
      const found = await find(header);
      if (!found) throw notSignedIn();
      if (requireCsrf && !sameToken(header.get(csrfHeader), csrfTokenOf(found.token))) {
        throw new ConnectError(`missing or wrong ${csrfHeader} header`, Code.PermissionDenied);
      }
      return found.signedIn;
    },
    async find(header) {
      return (await find(header))?.signedIn;
    },
    async end(session, secure) {
      await users.deleteSession(session.tokenHash);
      return this.clearCookies(secure);
    },
    clearCookies(secure) {
      return [sessionCookie, csrfCookie].map((name) => setCookie(name, "", { maxAge: 0, httpOnly: name === sessionCookie, secure }));
    },
  };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function csrfTokenOf(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("calltrace csrf").digest("base64url");
}

function sameToken(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
