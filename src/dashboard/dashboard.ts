import { fileURLToPath } from "node:url";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import type { Config } from "../config/config.js";
import type { Plans } from "../config/plans.js";
import type { Logger } from "../log/logger.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { KeyStore } from "../store/key-store.js";
import type { TraceReader } from "../store/trace-reader.js";
import type { UserStore } from "../store/user-store.js";
import { accountService } from "./account-service.js";
import { authService } from "./auth-service.js";
import { createHashingGate } from "./hashing-gate.js";
import { createLoginThrottle } from "./login-throttle.js";
import { createPasswordCheck } from "./password-check.js";
import { queryService } from "./query-service.js";
import { sessionInterceptor } from "./session-interceptor.js";
import { createSessions } from "./sessions.js";
import { createSignupLimit } from "./signup-limit.js";
import { staticAssets } from "./static-assets.js";
import { traceDownload } from "./trace-download.js";
import { validationInterceptor } from "./validation-interceptor.js";

export interface DashboardOptions {
  keys: KeyStore;
  users: UserStore;
  reader: TraceReader;
  plans: Plans;
  /** Whether anyone may sign up (SIGNUP_OPEN). */
  signupOpen: boolean;
  /** Session lifetime in seconds (SESSION_TTL). */
  sessionTtlSeconds: number;
  /** Behind a trusted proxy, X-Forwarded-Proto tells whether the browser used TLS. */
  trustProxy: boolean;
  logger: Logger;
  /** Vite's output directory; defaults to web/dist in this checkout. */
  webRoot?: string;
  /** The log-in, sign-up and hashing limits (docs/dashboard.md). */
  limits: DashboardLimits;
  /** Told the hashes of keys revoked or deleted here, so this process's key cache forgets them at once. */
  onKeysRevoked?: (hashes: string[]) => void;
  now?: () => Date;
}

export type DashboardLimits = Pick<
  Config,
  | "loginMaxPerEmailAddress"
  | "loginMaxPerAddress"
  | "loginSlowPerEmail"
  | "loginSlowDownMs"
  | "loginWindow"
  | "signupMaxPerAddress"
  | "signupMaxTotal"
  | "signupWindow"
  | "passwordHashConcurrency"
>;

/** The web dashboard: its Connect services and the paths the web app is served from. */
export interface Dashboard {
  /** Registers AuthService, AccountService and QueryService. */
  routes(router: ConnectRouter): void;
  /** Serves `/`, `/app/...` and the downloads; false for a path it does not own. */
  serve(req: NodeRequest, res: NodeResponse): boolean;
}

const mount = "/app/";
// The package root is two levels up from src/dashboard/, three from the compiled dist/src/dashboard/.
const defaultWebRoot = fileURLToPath(new URL(import.meta.url.endsWith(".js") ? "../../../web/dist" : "../../web/dist", import.meta.url));

export function createDashboard(options: DashboardOptions): Dashboard {
  const sessions = createSessions(options.users, { ttlSeconds: options.sessionTtlSeconds, ...(options.now ? { now: options.now } : {}) });
  const isSecure = (context: HandlerContext) =>
    context.url.startsWith("https:") || (options.trustProxy && context.requestHeader.get("x-forwarded-proto") === "https");
  const signupPlan = options.plans.has("free") ? "free" : [...options.plans.keys()][0]!;
  // The session is checked before the request is validated: strangers learn nothing about the API.
  const guarded = { interceptors: [sessionInterceptor(sessions), validationInterceptor()] };
  const assets = staticAssets(options.webRoot ?? defaultWebRoot, mount);
  const download = traceDownload(options.reader, sessions);
  const { limits } = options;
  const gate = createHashingGate({ concurrency: limits.passwordHashConcurrency });
  const throttle = createLoginThrottle({
    perEmailAndAddress: limits.loginMaxPerEmailAddress,
    perAddress: limits.loginMaxPerAddress,
    slowPerEmail: limits.loginSlowPerEmail,
    slowDownMs: limits.loginSlowDownMs,
    windowSeconds: limits.loginWindow,
  });
  const checkPassword = createPasswordCheck(throttle, gate);
  const signupLimit = createSignupLimit({ perAddress: limits.signupMaxPerAddress, total: limits.signupMaxTotal, windowSeconds: limits.signupWindow });

  return {
    routes(router) {
      router.service(
        AuthService,
        authService({
          users: options.users,
          sessions,
          checkPassword,
          signupLimit,
          gate,
          signupOpen: options.signupOpen,
          signupPlan,
          isSecure,
        }),
        { interceptors: [validationInterceptor()] },
      );
      router.service(
        AccountService,
        accountService({
          keys: options.keys,
          users: options.users,
          reader: options.reader,
          plans: options.plans,
          sessions,
          checkPassword,
          gate,
          isSecure,
          logger: options.logger,
          ...(options.onKeysRevoked ? { onKeysRevoked: options.onKeysRevoked } : {}),
          ...(options.now ? { now: options.now } : {}),
        }),
        guarded,
      );
      router.service(QueryService, queryService(options.reader), guarded);
    },
    serve(req, res) {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/" && (req.method === "GET" || req.method === "HEAD")) {
        res.writeHead(302, { location: mount, "content-length": 0 });
        res.end();
        return true;
      }
      const format = /^\/app\/export\/traces\.(csv|jsonl)$/.exec(url.pathname)?.[1] as "csv" | "jsonl" | undefined;
      if (format && req.method === "GET") {
        const host = req.headers.host ?? req.headers[":authority"];
        const absolute = new URL(url.pathname + url.search, `http://${typeof host === "string" ? host : "localhost"}`);
        download(req, res, absolute, format).catch((error: unknown) => {
          options.logger.error({ err: error }, "trace download failed");
          if (!res.headersSent) sendJson(res, 500, { error: "Internal error" });
          else res.destroy();
        });
        return true;
      }
      if (url.pathname === "/app" || url.pathname.startsWith(mount)) {
        assets(req, res, url.pathname === "/app" ? mount : url.pathname);
        return true;
      }
      return false;
    },
  };
}
