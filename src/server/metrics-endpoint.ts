import { timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "../observability/metrics.js";
import { sendJson } from "./json-response.js";
import type { NodeResponse } from "./node-types.js";
import { pathOf } from "./request-path.js";

/** `Authorization: Bearer <token>`, compared in constant time. */
export function metricsAuthorized(authorization: string | undefined, token: string): boolean {
  const presented = /^Bearer (.+)$/.exec(authorization ?? "")?.[1];
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function sendMetrics(metrics: Metrics, res: NodeResponse): Promise<void> {
  const { contentType, body } = await metrics.scrape();
  if (res.headersSent || res.destroyed) return;
  res.setHeader("content-type", contentType);
  res.setHeader("content-length", Buffer.byteLength(body));
  res.writeHead(200);
  res.end(body);
}

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

/**
 * A port of its own that serves only GET /metrics (METRICS_PORT), for a scraper on a private
 * network; with METRICS_TOKEN set it asks for the token there too.
 */
export async function listenForMetrics(
  metrics: Metrics,
  options: { port: number; host: string; token?: string | undefined },
): Promise<MetricsListener> {
  const server: Server = createServer({ headersTimeout: 5000, requestTimeout: 10_000 }, (req, res) => {
    if (pathOf(req.url) !== "/metrics") return sendJson(res, 404, { error: "Not found" });
    if (req.method !== "GET" && req.method !== "HEAD")
      return sendJson(res, 405, { error: "Method not allowed" }, new Headers({ allow: "GET, HEAD" }));
    if (options.token && !metricsAuthorized(req.headers.authorization, options.token)) {
      return sendJson(res, 401, { error: "Unauthorized" }, new Headers({ "www-authenticate": "Bearer" }));
    }
    void sendMetrics(metrics, res).catch(() => sendJson(res, 500, { error: "Internal error" }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
