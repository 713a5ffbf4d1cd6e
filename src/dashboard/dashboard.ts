import { fileURLToPath } from "node:url";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import type { Plans } from "../config/plans.js";
import type { Logger } from "../log/logger.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { KeyStore } from "../store/key-store.js";
import type { TraceReader } from "../store/trace-reader.js";
import type { UserStore } from "../store/user-store.js";
import { accountService } from "./account-service.js";
import { authService } from "./auth-service.js";
import { createLoginThrottle, type LoginThrottleOptions } from "./login-throttle.js";
import { queryService } from "./query-service.js";
import { sessionInterceptor } from "./session-interceptor.js";
import { createSessions } from "./sessions.js";
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
  /** Limits on failed log-ins; defaults in login-throttle.ts. */
  loginThrottle?: LoginThrottleOptions;
  now?: () => Date;
}

/** The web dashboard: its Connect services and the paths the web app is served from. */
export interface Dashboard {
  /** Registers AuthService, AccountService and QueryService. */
  routes(router: ConnectRouter): void;
  /** Serves `/`, `/app/...` and the downloads; false for a path it does not own. */
  serve(req: NodeRequest, res: NodeResponse): boolean;
}

const mount = "/app/";
const defaultWebRoot = fileURLToPath(new URL("../../web/dist", import.meta.url));

export function createDashboard(options: DashboardOptions): Dashboard {
  const sessions = createSessions(options.users, { ttlSeconds: options.sessionTtlSeconds, ...(options.now ? { now: options.now } : {}) });
  const isSecure = (context: HandlerContext) =>
    context.url.startsWith("https:") || (options.trustProxy && context.requestHeader.get("x-forwarded-proto") === "https");
  const signupPlan = options.plans.has("free") ? "free" : [...options.plans.keys()][0]!;
  // The session is checked before the request is validated: strangers learn nothing about the API.
  const guarded = { interceptors: [sessionInterceptor(sessions), validationInterceptor()] };
  const assets = staticAssets(options.webRoot ?? defaultWebRoot, mount);
  const download = traceDownload(options.reader, sessions);

  return {
    routes(router) {
      router.service(
        AuthService,
        authService({
          users: options.users,
          sessions,
          throttle: createLoginThrottle(options.loginThrottle),
          signupOpen: options.signupOpen,
          signupPlan,
          isSecure,
        }),
        { interceptors: [validationInterceptor()] },
      );
      router.service(
        AccountService,
        accountService({ keys: options.keys, reader: options.reader, plans: options.plans, ...(options.now ? { now: options.now } : {}) }),
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
