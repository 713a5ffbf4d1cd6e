import { fileURLToPath } from "node:url";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import type { AuthFailureLimiter } from "../limits/auth-failure-limiter.js";
import type { Config } from "../config/config.js";
import type { Plans } from "../config/plans.js";
import type { Logger } from "../log/logger.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { KeyVerifier } from "../auth/key-verifier.js";
import type { RateLimiter } from "../limits/rate-limiter.js";
import type { KeyStore } from "../store/key-store.js";
import type { TeamStore } from "../store/team-store.js";
import type { TraceReader } from "../store/trace-reader.js";
import type { UserStore } from "../store/user-store.js";
import { accessInterceptor, type AccessDeps } from "../teams/access-interceptor.js";
import { readApi, type ReadApi } from "../read-api/read-api.js";
import { auditTrail } from "../teams/audit-trail.js";
import type { InvitationMailer } from "../teams/invitations.js";
import { projectDeletion } from "../teams/project-deletion.js";
import { readLimit } from "../teams/read-limit.js";
import { teamService } from "../teams/team-service.js";
import { TeamService } from "../../gen/calltrace/v1/team_service_pb.js";
import { PriceService } from "../../gen/calltrace/v1/price_service_pb.js";
import { type PriceServiceDeps, priceService } from "../pricing/price-service.js";
import { oidcRoutes } from "../sso/oidc-routes.js";
import type { OidcSettings } from "../sso/oidc-settings.js";
import { accountService } from "./account-service.js";
import { auditDownload } from "./audit-download.js";
import { authService } from "./auth-service.js";
import { attemptWindow } from "./attempt-window.js";
import { createHashingGate } from "./hashing-gate.js";
import { createLoginThrottle } from "./login-throttle.js";
import { createPasswordCheck } from "./password-check.js";
import { queryService } from "./query-service.js";
import { createSessions } from "./sessions.js";
import { createSignupLimit } from "./signup-limit.js";
import { staticAssets } from "./static-assets.js";
import { traceDownload } from "./trace-download.js";
import { unexpectedErrors } from "./unexpected-errors.js";
import { validationInterceptor } from "./validation-interceptor.js";
import { AlertService } from "../../gen/calltrace/v1/alert_service_pb.js";
import { alertService, type AlertServiceDeps } from "../alerts/alert-service.js";
import { destinations } from "../alerts/destinations.js";
import type { SecretBox } from "../alerts/secret-box.js";
import type { AlertStore } from "../store/alert-store.js";

export interface DashboardOptions {
  keys: KeyStore;
  users: UserStore;
  teams: TeamStore;
  /** Checks read keys (the same cache as ingest: a revoked key stops within its 2 s). */
  verifier: KeyVerifier;
  /** Counts read keys' calls (READ_PER_MINUTE). */
  limiter: RateLimiter;
  readPerMinute: number;
  /** Failed authentications per client address (D12), shared with ingest. */
  authFailures: AuthFailureLimiter;
  /** RETENTION_DAYS, the most a project may keep its traces. */
  retentionDays: number;
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
  /** Single sign-on (OIDC_*); undefined: none. */
  oidc?: OidcSettings | undefined;
  /** Mails invitation links (SMTP_URL); undefined: the dashboard shows them to copy. */
  mailer?: InvitationMailer | undefined;
  /** Where links in mail point (PUBLIC_URL); undefined: the address the request came to. */
  publicUrl?: string | undefined;
  /** Told the hashes of keys revoked or deleted here, so this process's key cache forgets them at once. */
  onKeysRevoked?: (hashes: string[]) => void;
  /** Custom prices: the store, the ingest path's cache of them, and the re-price jobs. */
  pricing: Omit<PriceServiceDeps, "audit">;
  now?: () => Date;
  /** Alert rules, destinations and deliveries (AlertService), with the box that seals their secrets. */
  alerts: { store: AlertStore; secrets: SecretBox; privateUrls: boolean } & Pick<AlertServiceDeps, "onDue" | "ruleValues">;
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
  /** Registers AuthService, AccountService, QueryService, TeamService, PriceService and AlertService. */
  routes(router: ConnectRouter): void;
  /** Serves `/`, `/app/...`, the downloads (traces, audit log) and single sign-on's `/auth/oidc/...`; false for a path it does not own. */
  serve(req: NodeRequest, res: NodeResponse): boolean;
  /** The REST read routes (read-api.ts), let in as QueryService is (a read key or a session). */
  readApi: ReadApi;
}

const mount = "/app/";
// The package root is two levels up from src/dashboard/, three from the compiled dist/src/dashboard/.
const defaultWebRoot = fileURLToPath(new URL(import.meta.url.endsWith(".js") ? "../../../web/dist" : "../../web/dist", import.meta.url));

export function createDashboard(options: DashboardOptions): Dashboard {
  const sessions = createSessions(options.users, { ttlSeconds: options.sessionTtlSeconds, ...(options.now ? { now: options.now } : {}) });
  const isSecure = (context: HandlerContext) =>
    context.url.startsWith("https:") || (options.trustProxy && context.requestHeader.get("x-forwarded-proto") === "https");
  const signupPlan = options.plans.has("free") ? "free" : [...options.plans.keys()][0]!;
  const access: AccessDeps = {
    sessions,
    teams: options.teams,
    verifier: options.verifier,
    limitRead: readLimit(options.limiter, options.readPerMinute),
    authFailures: options.authFailures,
    trustProxy: options.trustProxy,
  };
  // Access is decided before the request is validated: strangers learn nothing about the API.
  const faults = unexpectedErrors(options.logger);
  const guarded = { interceptors: [faults, accessInterceptor(access), validationInterceptor()] };
  const assets = staticAssets(options.webRoot ?? defaultWebRoot, mount);
  const download = traceDownload(options.reader, access);
  const auditExport = auditDownload(options.teams, access);
  const audit = auditTrail(options.teams);
  const deletion = projectDeletion({ teams: options.teams, keys: options.keys, onKeysRevoked: options.onKeysRevoked, logger: options.logger });
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
  const sso =
    options.oidc &&
    oidcRoutes({
      settings: options.oidc,
      users: options.users,
      teams: options.teams,
      sessions,
      signupPlan,
      trustProxy: options.trustProxy,
      logger: options.logger,
      home: mount,
    });

  return {
    readApi: readApi(options.reader, access),
    routes(router) {
      router.service(
        AuthService,
        authService({
          users: options.users,
          teams: options.teams,
          sessions,
          checkPassword,
          signupLimit,
          gate,
          signupOpen: options.signupOpen,
          signupPlan,
          ssoEnabled: sso !== undefined,
          isSecure,
        }),
        { interceptors: [faults, validationInterceptor()] },
      );
      router.service(
        AccountService,
        accountService({
          keys: options.keys,
          users: options.users,
          teams: options.teams,
          audit,
          deletion,
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
      router.service(
        TeamService,
        teamService({
          teams: options.teams,
          users: options.users,
          plans: options.plans,
          audit,
          deletion,
          retentionDays: options.retentionDays,
          mailer: options.mailer,
          publicUrl: options.publicUrl,
          tokenAttempts: attemptWindow(limits.loginMaxPerAddress, limits.loginWindow),
        }),
        guarded,
      );
      router.service(PriceService, priceService({ ...options.pricing, audit }), guarded);
      router.service(
        AlertService,
        alertService({
          alerts: options.alerts.store,
          keys: options.keys,
          destinations: destinations(options.alerts.store, options.alerts.secrets, { privateUrls: options.alerts.privateUrls }),
          audit,
          onDue: options.alerts.onDue,
          ruleValues: options.alerts.ruleValues,
        }),
        guarded,
      );
    },
    serve(req, res) {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/" && (req.method === "GET" || req.method === "HEAD")) {
        res.writeHead(302, { location: mount, "content-length": 0 });
        res.end();
        return true;
      }
      const format = /^\/app\/export\/traces\.(csv|jsonl)$/.exec(url.pathname)?.[1] as "csv" | "jsonl" | undefined;
      const auditLog = url.pathname === "/app/export/audit.jsonl";
      if ((format || auditLog) && req.method === "GET") {
        const host = req.headers.host ?? req.headers[":authority"];
        const absolute = new URL(url.pathname + url.search, `http://${typeof host === "string" ? host : "localhost"}`);
        (format ? download(req, res, absolute, format) : auditExport(req, res, absolute)).catch((error: unknown) => {
          options.logger.error({ err: error }, format ? "trace download failed" : "audit download failed");
          if (!res.headersSent) sendJson(res, 500, { error: "Internal error" });
          else res.destroy();
        });
        return true;
      }
      if (sso?.(req, res, url)) return true;
      if (url.pathname === "/app" || url.pathname.startsWith(mount)) {
        assets(req, res, url.pathname === "/app" ? mount : url.pathname);
        return true;
      }
      return false;
    },
  };
}
