import type { NodeResponse } from "../server/node-types.js";

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => escapes[c]!);

/** Answers a failed single sign-on with a small page that says why and offers to start again. */
export function sendSsoErrorPage(res: NodeResponse, status: number, message: string, cookies: string[] = []): void {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Single sign-on failed · calltrace</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}</style></head>
<body><h1>Single sign-on failed</h1>
<p role="alert" id="sso-error">${escapeHtml(message)}</p>
<p><a href="/auth/oidc/start">Sign in again</a> · <a href="/app/">Back to calltrace</a></p>
</body></html>
`;
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    ...(cookies.length > 0 ? { "set-cookie": cookies } : {}),
  });
  res.end(body);
}
