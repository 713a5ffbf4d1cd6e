import http from "node:http";
import https from "node:https";
import type { TraceAttributes } from "./attributes.js";
import { BudgetExceeded } from "./budget-exceeded.js";
import { type Budget, type BudgetedCall, exceededBudget, parseBudgetStatus } from "./budget-status.js";

export interface BudgetGuardOptions {
  /** GET /v1/budget of the service. */
  url: URL;
  apiKey: string;
  refreshMs: number;
  timeoutMs: number;
  /** init()'s attributes, which every call's trace carries. */
  defaults: TraceAttributes | undefined;
  warn: (message: string) => void;
}

/**
 * `enforceBudget`: keeps the service's budget status in memory, refreshed in
 * the background every `refreshMs`, and refuses a call that an exceeded budget
 * counts. The check reads memory only: it adds no request to a call. It fails
 * open: until a first status arrives, and whenever a refresh fails (service
 * unreachable, 5xx, timeout, 401/403, a body it cannot read), no call is
 * refused. Each kind of failure is warned about once.
 */
export class BudgetGuard {
  readonly #options: BudgetGuardOptions;
  readonly #warned = new Set<string>();
  #budgets: readonly Budget[] = [];
  #timer: NodeJS.Timeout | undefined;
  #request: http.ClientRequest | undefined;
  #stopped = false;

  constructor(options: BudgetGuardOptions) {
    this.#options = options;
  }

  /** Starts refreshing: now, then every `refreshMs`. Never keeps the process alive. */
  start(): void {
    this.#refresh();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#request?.destroy();
  }

  /** The error to refuse `call` with, or `undefined` to let it through. */
  check(call: BudgetedCall): BudgetExceeded | undefined {
    const budget = exceededBudget(this.#budgets, call, this.#options.defaults);
    return budget && new BudgetExceeded(budget);
  }

  #refresh(): void {
    if (this.#stopped) return;
    this.#fetch()
      .then(
        (budgets) => {
          this.#budgets = budgets;
          this.#warned.clear(); // answering again: a later failure is news
        },
        (failure: Failure) => {
          if (this.#stopped) return; // its own request, cut short by stop(): nothing to warn about
          this.#budgets = []; // fail open
          this.#warnOnce(failure.kind, failure.message);
        },
      )
      .finally(() => {
        if (this.#stopped) return;
        this.#timer = setTimeout(() => this.#refresh(), this.#options.refreshMs);
        this.#timer.unref();
      });
  }

  #fetch(): Promise<Budget[]> {
    const { url, apiKey, timeoutMs } = this.#options;
    const client = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      const request = client.get(url, { headers: { Authorization: `Bearer ${apiKey}`, Accept: "application/json" } });
      this.#request = request;
      // A refresh in flight must not hold the process open at exit.
      request.on("socket", (socket) => socket.unref());
      request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", (error) =>
        reject(failure("unreachable", `could not read budgets from ${url.href} (${error.message})`)),
      );
      request.on("response", (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk) => (text += chunk));
        response.on("error", (error) => reject(failure("unreachable", `budget status cut off: ${error.message}`)));
        response.on("end", () => {
          const status = response.statusCode ?? 0;
          if (status === 401 || status === 403) {
            reject(failure("auth", `the service refused the API key for ${url.pathname} (${status})`));
          } else if (status < 200 || status >= 300) {
            reject(failure(`status ${status}`, `${url.href} answered ${status}`));
          } else {
            try {
              resolve(parseBudgetStatus(JSON.parse(text)));
            } catch (error) {
              reject(failure("malformed", `unreadable budget status from ${url.href}: ${(error as Error).message}`));
            }
          }
        });
      });
    });
  }

  #warnOnce(kind: string, message: string): void {
    if (this.#warned.has(kind)) return;
    this.#warned.add(kind);
    this.#options.warn(`enforceBudget: ${message}; calls are not refused until it answers`);
  }
}

interface Failure {
  kind: string;
  message: string;
}

function failure(kind: string, message: string): Failure {
  return { kind, message };
}

/** GET /v1/budget beside the trace endpoint (`…/v1/traces`). */
export function budgetUrl(traceEndpoint: URL): URL {
  const url = new URL(traceEndpoint.href);
  url.pathname = url.pathname.replace(/\/+$/, "").replace(/\/traces$/, "/budget");
  if (!url.pathname.endsWith("/budget")) url.pathname = "/v1/budget";
  url.search = "";
  return url;
}
