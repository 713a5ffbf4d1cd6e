import * as client from "openid-client";
import { isLoopback, type OidcSettings } from "./oidc-settings.js";

/** The provider's metadata and our client's, discovered on first use and kept; a failed discovery is retried on the next sign-in. */
export function oidcConfiguration(settings: OidcSettings): () => Promise<client.Configuration> {
  let discovered: Promise<client.Configuration> | undefined;
  return () => {
    discovered ??= client
      .discovery(settings.issuer, settings.clientId, settings.clientSecret, undefined, {
        // oidcSettings() allows plain HTTP only to a loopback issuer.
        ...(isLoopback(settings.issuer) ? { execute: [client.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  };
}
