import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";

/** A real OpenID provider (oidc-provider, certified) for the SSO tests, with its developer log-in pages. */
export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

/**
 * Starts oidc-provider on `port` with one confidential client allowed to return to `redirectUris`.
 * Any login name signs in; it is the account's email, verified unless it starts with `unverified.`.
 * PKCE is required, as a provider may require it.
 */
export async function startTestProvider(port: number, redirectUris: string[]): Promise<TestProvider> {
  // localhost, not 127.0.0.1 like calltrace: the provider is another site, as in real life, so the flow cookie must survive a cross-site redirect.
  const issuer = `http://localhost:${port}`;
  const clientId = "calltrace-test";
  const clientSecret = "a-client-secret-made-for-this-test-only";
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        claims: async () => ({ sub, email: sub, email_verified: !sub.startsWith("unverified.") }),
      };
    },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["cookie-key-for-this-test-only"] },
    // ID tokens live 5 minutes, as many providers issue them; the access token reads userinfo.
    ttl: { IdToken: 300, AccessToken: 300, Interaction: 600, Session: 3600, Grant: 3600 },
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    clientId,
    clientSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
