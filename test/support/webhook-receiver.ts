import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Webhook } from "standardwebhooks";

export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  /** Every request, in order of arrival. */
  received: ReceivedDelivery[];
  /** The requests answered 2xx whose signature the receiver's secret verified. */
  accepted: ReceivedDelivery[];
  close(): Promise<void>;
}

/**
 * A webhook receiver as a user would write one: it verifies each request with the
 * `standardwebhooks` package (signature and timestamp tolerance) when given a secret, answers
 * 401 when that fails, and otherwise whatever `status(n)` says for the n-th request (0-based).
 */
export async function startWebhookReceiver(
  options: { secret?: string; port?: number; status?: (n: number) => number } = {},
): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  const accepted: ReceivedDelivery[] = [];
  const verifier = options.secret ? new Webhook(options.secret) : undefined;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => {
      const delivery = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), receivedAt: Date.now() };
      const n = received.push(delivery) - 1;
      if (verifier) {
        try {
          verifier.verify(delivery.body, request.headers as Record<string, string>);
        } catch {
          response.writeHead(401).end("bad signature");
          return;
        }
      }
      const status = options.status?.(n) ?? 204;
      if (status < 300) accepted.push(delivery);
      response.writeHead(status).end(status < 300 ? "" : `status ${status}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/calltrace`,
    port,
    received,
    accepted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Polls `condition` every 20 ms until it holds, failing after `timeoutMs` with `what`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
