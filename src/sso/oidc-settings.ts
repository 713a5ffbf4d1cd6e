import { type Config, ConfigError } from "../config/config.js";

/** Single sign-on's configuration (OIDC_*), checked whole at start-up. */
export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
  /** The registered callback; undefined: derived from each request's own address. */
  redirectUrl: URL | undefined;
}

export const callbackPath = "/auth/oidc/callback";

/** The SSO settings, undefined without OIDC_ISSUER; ConfigError when they are incomplete or malformed. */
export function oidcSettings(
  config: Pick<Config, "oidcIssuer" | "oidcClientId" | "oidcClientSecret" | "oidcRedirectUrl">,
): OidcSettings | undefined {
  if (!config.oidcIssuer) {
    if (config.oidcClientId || config.oidcClientSecret || config.oidcRedirectUrl) {
      throw new ConfigError("OIDC_CLIENT_ID, OIDC_CLIENT_SECRET and OIDC_REDIRECT_URL need OIDC_ISSUER");
    }
    return undefined;
  }
  if (!config.oidcClientId || !config.oidcClientSecret) {
    throw new ConfigError("OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET");
  }
  const issuer = parseUrl("OIDC_ISSUER", config.oidcIssuer);
  // Plain HTTP only where the traffic never leaves the machine (a provider started for tests or development).
  if (issuer.protocol !== "https:" && !(issuer.protocol === "http:" && isLoopback(issuer))) {
    throw new ConfigError(
      `OIDC_ISSUER: expected an https:// URL (http:// only on a loopback host), got ${JSON.stringify(config.oidcIssuer)}`,
    );
  }
  const redirectUrl = config.oidcRedirectUrl ? parseUrl("OIDC_REDIRECT_URL", config.oidcRedirectUrl) : undefined;
  if (redirectUrl && (!/^https?:$/.test(redirectUrl.protocol) || redirectUrl.pathname !== callbackPath || redirectUrl.search)) {
    throw new ConfigError(
      `OIDC_REDIRECT_URL: expected this server's address followed by ${callbackPath}, got ${JSON.stringify(config.oidcRedirectUrl)}`,
    );
  }
  return { issuer, clientId: config.oidcClientId, clientSecret: config.oidcClientSecret, redirectUrl };
}

/** Whether the URL names this machine: plain HTTP to it cannot be read or altered on the way. */
export function isLoopback(url: URL): boolean {
  return url.hostname === "localhost" || url.hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(url.hostname);
}

function parseUrl(env: string, value: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new ConfigError(`${env}: expected a URL, got ${JSON.stringify(value)}`);
  }
}
