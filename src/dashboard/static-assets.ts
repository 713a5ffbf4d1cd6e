import { createReadStream, existsSync, statSync } from "node:fs";
import { extname, join, normalize, sep } from "node:path";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

/**
 * The page may load and run only our own files and talk only to its own origin; it may not be
 * framed (clickjacking). Inline style attributes are allowed for chart geometry.
 */
const securityHeaders = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

/**
 * Serves the built web app (Vite's output) under `mount`: files by path, and index.html for
 * every other path so the app's own routes survive a reload. Hashed assets are cached for good.
 */
export function staticAssets(root: string, mount: string) {
  const index = join(root, "index.html");
  return (req: NodeRequest, res: NodeResponse, path: string): void => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" });
      res.end("Method not allowed");
      return;
    }
    if (!existsSync(index)) {
      res.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
      res.end("The web app is not built: run `npm run build:web` (npm install does it).");
      return;
    }
    const relative = decodeSafely(path.slice(mount.length));
    let file = relative === undefined ? undefined : normalize(join(root, relative));
    if (file !== undefined && (!file.startsWith(root + sep) || !isFile(file))) file = undefined;
    const target = file ?? index;
    const immutable = target !== index && relative?.startsWith("assets/");
    res.writeHead(200, {
      ...securityHeaders,
      "content-type": contentTypes[extname(target)] ?? "application/octet-stream",
      "content-length": statSync(target).size,
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    });
    if (req.method === "HEAD") res.end();
    else createReadStream(target).pipe(res as NodeJS.WritableStream);
  };
}

function decodeSafely(text: string): string | undefined {
  try {
    const decoded = decodeURIComponent(text);
    return decoded.includes("\0") ? undefined : decoded;
  } catch {
    return undefined;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
