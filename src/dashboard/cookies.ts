/** The value of one cookie in a `Cookie` request header, or undefined. */
export function readCookie(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeSafely(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** A value that is not valid percent-encoding is no value: a malformed cookie is no cookie. */
function decodeSafely(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

export interface CookieOptions {
  /** Seconds until the browser forgets it; 0 deletes it. */
  maxAge: number;
  /** Hidden from page scripts. */
  httpOnly: boolean;
  /** Sent over TLS only. */
  secure: boolean;
  /** Lax lets a cookie come back on a top-level navigation from another site (an SSO provider's redirect). */
  sameSite?: "Strict" | "Lax";
  /** Sent only with requests under this path; "/" by default. */
  path?: string;
}

/** A `Set-Cookie` value, by default scoped to the whole site and never sent on cross-site requests (SameSite=Strict). */
export function setCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${options.path ?? "/"}`,
    `Max-Age=${options.maxAge}`,
    `SameSite=${options.sameSite ?? "Strict"}`,
  ];
  if (options.httpOnly) parts.push("HttpOnly");
  if (options.secure) parts.push("Secure");
  return parts.join("; ");
}
