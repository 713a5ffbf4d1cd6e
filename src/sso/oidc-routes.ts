import * as client from "openid-client";
import { isDeliverableEmail, normalizeEmail } from "../dashboard/email-address.js";
import type { Sessions } from "../dashboard/sessions.js";
import type { Logger } from "../log/logger.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import { sendSsoErrorPage } from "./error-page.js";
import { flowCookies } from "./flow-cookie.js";
import { oidcConfiguration } from "./oidc-client.js";
import { callbackPath, type OidcSettings } from "./oidc-settings.js";
import { type SsoUserDeps, ssoUser } from "./sso-user.js";

export interface OidcRoutesDeps extends SsoUserDeps {
  settings: OidcSettings;
  sessions: Sessions;
  /** Behind a trusted proxy, X-Forwarded-Proto tells whether the browser used TLS. */
  trustProxy: boolean;
  logger: Logger;
  /** Where a signed-in browser lands. */
  home: string;
}

const startPath = "/auth/oidc/start";

/** A sign-in that cannot go on, with the status and the message its page shows. */
class SsoRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}

/**
 * Single sign-on with OpenID Connect (docs/teams.md): GET /auth/oidc/start sends the browser to
 * the provider (authorization code flow with PKCE, state and nonce); GET /auth/oidc/callback
 * exchanges the code, has openid-client verify the ID token, and starts a dashboard session for
 * the verified email. Answers false for a path it does not own.
 */
export function oidcRoutes(deps: OidcRoutesDeps): (req: NodeRequest, res: NodeResponse, url: URL) => boolean {
  const configuration = oidcConfiguration(deps.settings);
  const flows = flowCookies(deps.settings.clientSecret);
  const isSecure = (req: NodeRequest) =>
    (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true ||
    (deps.trustProxy && req.headers["x-forwarded-proto"] === "https");

  function redirectUriOf(req: NodeRequest, secure: boolean): string {
    if (deps.settings.redirectUrl) return deps.settings.redirectUrl.href;
    const host = req.headers.host ?? req.headers[":authority"];
    try {
      if (typeof host !== "string" || host === "") throw new TypeError("no Host header");
      return new URL(callbackPath, `${secure ? "https" : "http"}://${host}`).href;
    } catch {
      throw new SsoRefusal(400, "The request has no usable Host header to build the callback address from; set OIDC_REDIRECT_URL.");
    }
  }

  async function provider(): Promise<client.Configuration> {
    try {
      return await configuration();
    } catch (error) {
      throw new SsoRefusal(
        502,
        `The identity provider at ${deps.settings.issuer.href} cannot be reached or did not answer as an OpenID provider. Try again later.`,
        error,
      );
    }
  }

  async function start(req: NodeRequest, res: NodeResponse): Promise<void> {
    const secure = isSecure(req);
    const redirectUri = redirectUriOf(req, secure);
    const config = await provider();
    const flow = { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier(), redirectUri };
    const location = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid email",
      response_type: "code",
      code_challenge: await client.calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: "S256",
      state: flow.state,
      nonce: flow.nonce,
    });
    res.writeHead(302, {
      location: location.href,
      "set-cookie": [flows.set(flow, secure)],
      "cache-control": "no-store",
      "content-length": 0,
    });
    res.end();
  }

  async function callback(req: NodeRequest, res: NodeResponse, url: URL): Promise<void> {
    const secure = isSecure(req);
    const flow = flows.read(req.headers.cookie);
    if (!flow) {
      throw new SsoRefusal(
        400,
        "This sign-in was not started in this browser, was finished already, or took longer than 10 minutes. Sign in again.",
      );
    }
    const config = await provider();
    // The provider's answer, read against the redirect_uri it was sent to (a proxy may have rewritten our own address).
    const answer = new URL(flow.redirectUri);
    answer.search = url.search;
    const tokens = await client
      .authorizationCodeGrant(config, answer, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      })
      .catch((error: unknown) => {
        throw refusalOf(error);
      });
    const claims = tokens.claims();
    if (!claims) throw new SsoRefusal(403, "The identity provider sent no ID token.");
    let { email, email_verified: verified } = claims;
    if (email === undefined) {
      // Providers may keep the email out of the ID token and give it at the userinfo endpoint.
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub).catch((error: unknown) => {
        throw refusalOf(error);
      });
      ({ email, email_verified: verified } = info);
    }
    const address = typeof email === "string" ? normalizeEmail(email) : "";
    if (!isDeliverableEmail(address)) {
      throw new SsoRefusal(403, "The identity provider did not give an email address this server can use; it needs the `email` scope.");
    }
    if (verified !== true && verified !== "true") {
      throw new SsoRefusal(
        403,
        `The identity provider has not verified the email address ${address}; verify it there, then sign in again.`,
      );
    }
    const user = await ssoUser(deps, { email: address, issuer: claims.iss, subject: claims.sub });
    const sessionCookies = await deps.sessions.start(user, secure, req.headers["user-agent"]);
    res.writeHead(302, {
      location: deps.home,
      "set-cookie": [...sessionCookies, flows.clear(secure)],
      "cache-control": "no-store",
      "content-length": 0,
    });
    res.end();
  }

  const handlers = new Map([
    [startPath, start],
    [callbackPath, callback],
  ]);

  return (req, res, url) => {
    const handler = handlers.get(url.pathname);
    if (!handler) return false;
    if (req.method !== "GET") {
      res.setHeader("allow", "GET");
      sendSsoErrorPage(res, 405, `${url.pathname} answers GET only.`);
      return true;
    }
    handler(req, res, url).catch((error: unknown) => {
      const refusal = error instanceof SsoRefusal ? error : undefined;
      // A refusal's cause may carry the callback's parameters (its code): only the words are logged.
      if (refusal && refusal.status < 500) deps.logger.info({ status: refusal.status, reason: refusal.message }, "single sign-on refused");
      else deps.logger.error({ err: refusal?.cause ?? error, reason: refusal?.message }, "single sign-on failed");
      if (res.headersSent) return void res.destroy();
      // A failed callback forgets the flow: its state, nonce and verifier are never tried twice.
      const cookies = url.pathname === callbackPath ? [flows.clear(isSecure(req))] : [];
      sendSsoErrorPage(
        res,
        refusal?.status ?? 500,
        refusal?.message ?? "Single sign-on failed on this server; the error is logged.",
        cookies,
      );
    });
    return true;
  };
}

/** What the provider's answer failed on, in words; anything but a protocol refusal is the provider being unreachable. */
function refusalOf(error: unknown): SsoRefusal {
  if (error instanceof client.AuthorizationResponseError || error instanceof client.ResponseBodyError) {
    const description = error.error_description ? `: ${error.error_description}` : "";
    return new SsoRefusal(403, `The identity provider refused the sign-in (${error.error}${description}). Sign in again.`, error);
  }
  if (error instanceof client.ClientError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new SsoRefusal(403, `The identity provider's answer failed verification (${error.message}${cause}). Sign in again.`, error);
  }
  return new SsoRefusal(502, "The identity provider cannot be reached. Try again later.", error);
}
