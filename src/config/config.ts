import { parseArgs } from "node:util";

/** The service's configuration (D21): each option is an environment variable with a matching CLI flag. */
export interface Config {
  /** TCP port to listen on; 0 picks a free one. */
  port: number;
  /** Interface to bind; 127.0.0.1 keeps the embedded mode private, 0.0.0.0 exposes it. */
  host: string;
  /** Directory of the embedded store. */
  dataDir: string;
  /** Redis for shared limiters; unset means in-process limiters. */
  redisUrl: string | undefined;
  /** Longest a Redis limiter call may take before the in-process insurance limiter answers. */
  redisTimeoutMs: number;
  /** Worker processes sharing the port (node:cluster); 1 serves from this process alone. */
  workers: number;
  /** MongoDB for traces, keys and accounts; unset means the embedded store. */
  mongodbUri: string | undefined;
  /** Take the client address from X-Forwarded-For (only behind a trusted proxy). */
  trustProxy: boolean;
  /** Largest accepted request body, in bytes (D9). */
  maxBodyBytes: number;
  /** Largest OTLP Export (OTLP/HTTP body or OTLP/gRPC message), in bytes after inflating: a collector's batches are larger than one trace. */
  otlpMaxBodyBytes: number;
  /** JSON file of plans (D19); unset means the built-in free and pro plans. */
  plansFile: string | undefined;
  /** pino log level. */
  logLevel: string;
  /** PEM certificate and key; when both are set the port speaks TLS with ALPN (h2, http/1.1). */
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Whether anyone may sign up in the dashboard; false for private installs. */
  signupOpen: boolean;
  /** Calls a read key may make per minute (QueryService, GET /v1/traces, GET /v1/metrics, downloads). */
  readPerMinute: number;
  /** Dashboard session lifetime in seconds. */
  sessionTtl: number;
  /** How long GET /v1/budget reuses one key's answer, in ms. */
  budgetCacheMs: number;
  /** How often alert rules are evaluated, in ms (one instance at a time). */
  alertEvaluateMs: number;
  /** Log-in attempts for one email from one address per LOGIN_WINDOW; past it 429 until the window ends. */
  loginMaxPerEmailAddress: number;
  /** Log-in attempts from one address, whatever the email, per LOGIN_WINDOW; past it 429. */
  loginMaxPerAddress: number;
  /** Log-in attempts for one email from everywhere per LOGIN_WINDOW; past it each attempt is slowed down, never refused. */
  loginSlowPerEmail: number;
  /** How long each log-in attempt past LOGIN_SLOW_PER_EMAIL waits before its password is checked, in ms. */
  loginSlowDownMs: number;
  /** The log-in limits' window, in seconds. */
  loginWindow: number;
  /** Sign-ups from one address per SIGNUP_WINDOW. */
  signupMaxPerAddress: number;
  /** Sign-ups from everywhere per SIGNUP_WINDOW. */
  signupMaxTotal: number;
  /** The sign-up limits' window, in seconds. */
  signupWindow: number;
  /** Most password hashes (scrypt) computed at once; log-ins go before sign-ups in the queue. */
  passwordHashConcurrency: number;
  /** Days a trace is kept after it was received, in either store; 0 keeps traces forever. */
  retentionDays: number;
  /** Distinct values of each attribute (user, session, tag, metadata, ...) counted apart per project and UTC day; the rest count as "other" (D54). 0: no bound. */
  groupValuesPerDay: number;
  /** The embedded store ranks an attribution group-by's top groups in SQL (false: every group's sums are read and ranked in JavaScript). */
  groupRankInSql: boolean;
  /** The embedded store groups tags by each call's tag set number (D83) (false: by each call's tags JSON). */
  attributeSetsRead: boolean;
  /** Most traces waiting to be written; beyond it requests get 503 at once (D13). */
  writerMaxQueue: number;
  /** Most traces committed together in one batch. */
  writerMaxBatch: number;
  /** Longest a trace waits for others to join its batch, in milliseconds. */
  writerMaxWaitMs: number;
  /** Longest a request waits for its trace to be committed before it gets 503, in milliseconds. */
  writeTimeoutMs: number;
  /** On SIGTERM, how long in-flight requests and queued writes get before the process exits, in milliseconds. */
  shutdownGraceMs: number;
  /** Longest a client may take to send a request's headers, in milliseconds; then the connection is cut. */
  headersTimeoutMs: number;
  /** Longest a client may take to send a whole request (headers and body), in milliseconds; then 408 and cut. */
  requestTimeoutMs: number;
  /** An idle HTTP/1.1 keep-alive connection is closed after this many milliseconds. */
  keepAliveTimeoutMs: number;
  /** An HTTP/2 connection with no frames for this many milliseconds is closed. */
  h2IdleTimeoutMs: number;
  /** Most concurrent streams one HTTP/2 connection may have open (SETTINGS_MAX_CONCURRENT_STREAMS). */
  h2MaxConcurrentStreams: number;
  /** Most open client connections on the port; connections past it are closed at once. */
  maxConnections: number;
  /** Serve Prometheus metrics on this port (same host); unset: no metrics port. */
  metricsPort: number | undefined;
  /** Serve Prometheus metrics at /metrics on the main port to requests bearing this token; unset: not on the main port. */
  metricsToken: string | undefined;
  /** OTLP span attributes kept as trace metadata under their own names, comma-separated (docs/otlp.md). */
  otlpMetadataAttributes: string | undefined;
  /** Answer gRPC and Connect ingest calls in protobuf on the direct path (direct-unary.ts); false: connect-es answers every call. */
  directUnary: boolean;
  /** Read protobuf OTLP Exports with the OTLP reader (otlp-protobuf.ts); false: protobuf-es reads them all. */
  otlpReader: boolean;
  /** `traces import` reads exported rows on the fast path (exported-row-fast.ts); false: every row through the API's generic reader. */
  importFastPath: boolean;
  /** The OpenID provider's issuer URL; set with the client id and secret, the dashboard offers single sign-on (docs/teams.md). */
  oidcIssuer: string | undefined;
  /** The client id registered at the OpenID provider. */
  oidcClientId: string | undefined;
  /** The client secret registered at the OpenID provider. */
  oidcClientSecret: string | undefined;
  /** The callback URL registered at the provider; unset: this server's own address + /auth/oidc/callback. */
  oidcRedirectUrl: string | undefined;
  /** SMTP server invitation links are mailed through (`smtp://user:pass@host:port`); unset: the dashboard shows the link to copy. */
  smtpUrl: string | undefined;
  /** The From address of invitation mail. */
  smtpFrom: string;
  /** This service's address as browsers reach it, for links in mail; unset: the address the request came to. */
  publicUrl: string | undefined;
  /** 32 bytes in base64 that seal webhook secrets; unset: the store keeps one (a file in DATA_DIR, or the MongoDB database). */
  alertSecretKey: string | undefined;
  /** The unit of the alert retry schedule, in ms: attempts at 0, 1, 60, 360, 1440, 3600, 7200 and 7200 units. */
  alertRetryBaseMs: number;
  /** Whether webhook and Slack destinations may point at loopback, private and link-local addresses. */
  alertPrivateUrls: boolean;
}

interface OptionSpec {
  env: string;
  flag: string;
  kind: "string" | "integer" | "boolean";
  fallback?: string;
  describe: string;
}

/** One table drives the environment variables, the CLI flags and the README's configuration table. */
export const configOptions = {
  port: { env: "PORT", flag: "port", kind: "integer", fallback: "8080", describe: "TCP port (0 picks a free one)" },
  host: { env: "HOST", flag: "host", kind: "string", fallback: "127.0.0.1", describe: "interface to bind; 0.0.0.0 to expose" },
  dataDir: { env: "DATA_DIR", flag: "data-dir", kind: "string", fallback: "./data", describe: "embedded store directory" },
  redisUrl: { env: "REDIS_URL", flag: "redis-url", kind: "string", describe: "Redis for shared limiters (unset: in-process)" },
  redisTimeoutMs: { env: "REDIS_TIMEOUT_MS", flag: "redis-timeout-ms", kind: "integer", fallback: "50", describe: "longest a Redis limiter call may take before the in-process insurance answers, in ms" },
  workers: { env: "WORKERS", flag: "workers", kind: "integer", fallback: "1", describe: "worker processes sharing the port (limits shared across them)" },
  mongodbUri: { env: "MONGODB_URI", flag: "mongodb-uri", kind: "string", describe: "MongoDB store (unset: embedded store)" },
  trustProxy: { env: "TRUST_PROXY", flag: "trust-proxy", kind: "boolean", fallback: "false", describe: "client address from X-Forwarded-For" },
  maxBodyBytes: { env: "MAX_BODY_BYTES", flag: "max-body-bytes", kind: "integer", fallback: "65536", describe: "largest request body in bytes" },
  otlpMaxBodyBytes: { env: "OTLP_MAX_BODY_BYTES", flag: "otlp-max-body-bytes", kind: "integer", fallback: "16777216", describe: "largest OTLP Export in bytes, after inflating gzip ([docs/otlp.md](docs/otlp.md))" },
  plansFile: { env: "PLANS_FILE", flag: "plans-file", kind: "string", describe: "JSON file of plans (unset: free and pro)" },
  logLevel: { env: "LOG_LEVEL", flag: "log-level", kind: "string", fallback: "info", describe: "fatal, error, warn, info, debug, trace or silent" },
  tlsCertFile: { env: "TLS_CERT_FILE", flag: "tls-cert-file", kind: "string", describe: "PEM certificate; with the key, serve TLS" },
  tlsKeyFile: { env: "TLS_KEY_FILE", flag: "tls-key-file", kind: "string", describe: "PEM private key for TLS" },
  signupOpen: { env: "SIGNUP_OPEN", flag: "signup-open", kind: "boolean", fallback: "true", describe: "allow dashboard sign-up (false for private installs)" },
  readPerMinute: { env: "READ_PER_MINUTE", flag: "read-per-minute", kind: "integer", fallback: "300", describe: "calls per minute a read key may make to the read API" },
  budgetCacheMs: { env: "BUDGET_CACHE_MS", flag: "budget-cache-ms", kind: "integer", fallback: "2000", describe: "how long GET /v1/budget reuses a key's answer, in ms ([docs/alerts.md](docs/alerts.md))" },
  alertEvaluateMs: { env: "ALERT_EVALUATE_MS", flag: "alert-evaluate-ms", kind: "integer", fallback: "10000", describe: "how often alert rules are evaluated, in ms (an alert fires within this of its crossing)" },
  sessionTtl: { env: "SESSION_TTL", flag: "session-ttl", kind: "integer", fallback: "604800", describe: "dashboard session lifetime in seconds" },
  loginMaxPerEmailAddress: { env: "LOGIN_MAX_PER_EMAIL_ADDRESS", flag: "login-max-per-email-address", kind: "integer", fallback: "5", describe: "log-in attempts for one email from one address per window (then 429)" },
  loginMaxPerAddress: { env: "LOGIN_MAX_PER_ADDRESS", flag: "login-max-per-address", kind: "integer", fallback: "50", describe: "log-in attempts from one address per window (then 429)" },
  loginSlowPerEmail: { env: "LOGIN_SLOW_PER_EMAIL", flag: "login-slow-per-email", kind: "integer", fallback: "100", describe: "log-in attempts for one email from all addresses per window before each further one is slowed (never refused)" },
  loginSlowDownMs: { env: "LOGIN_SLOW_DOWN_MS", flag: "login-slow-down-ms", kind: "integer", fallback: "2000", describe: "delay of each log-in attempt past LOGIN_SLOW_PER_EMAIL, in ms" },
  loginWindow: { env: "LOGIN_WINDOW", flag: "login-window", kind: "integer", fallback: "900", describe: "window of the log-in limits, in seconds" },
  signupMaxPerAddress: { env: "SIGNUP_MAX_PER_ADDRESS", flag: "signup-max-per-address", kind: "integer", fallback: "5", describe: "sign-ups from one address per window (then 429)" },
  signupMaxTotal: { env: "SIGNUP_MAX_TOTAL", flag: "signup-max-total", kind: "integer", fallback: "100", describe: "sign-ups from all addresses per window (then 429)" },
  signupWindow: { env: "SIGNUP_WINDOW", flag: "signup-window", kind: "integer", fallback: "3600", describe: "window of the sign-up limits, in seconds" },
  passwordHashConcurrency: { env: "PASSWORD_HASH_CONCURRENCY", flag: "password-hash-concurrency", kind: "integer", fallback: "2", describe: "password hashes computed at once (log-ins queue before sign-ups)" },
  retentionDays: { env: "RETENTION_DAYS", flag: "retention-days", kind: "integer", fallback: "90", describe: "days traces are kept (0: forever)" },
  groupRankInSql: { env: "GROUP_RANK_IN_SQL", flag: "group-rank-in-sql", kind: "boolean", fallback: "true", describe: "the embedded store ranks a group-by's top groups in SQL (false: reads every group's sums and ranks them in JavaScript)" },
  attributeSetsRead: { env: "ATTRIBUTE_SETS_READ", flag: "attribute-sets-read", kind: "boolean", fallback: "true", describe: "the embedded store groups tags and metadata by each call's numbered set (false: by each call's JSON; D83, D86)" },
  groupValuesPerDay: { env: "GROUP_VALUES_PER_DAY", flag: "group-values-per-day", kind: "integer", fallback: "10000", describe: "values of each attribute (user, session, tag, metadata) counted apart per project and day; the rest count as other (0: no bound; [docs/operations.md](docs/operations.md))" },
  writerMaxQueue: { env: "WRITER_MAX_QUEUE", flag: "writer-max-queue", kind: "integer", fallback: "20000", describe: "traces waiting to be written before 503" },
  writerMaxBatch: { env: "WRITER_MAX_BATCH", flag: "writer-max-batch", kind: "integer", fallback: "1000", describe: "most traces handed to the store in one batch (MongoDB: one insertMany)" },
  writerMaxWaitMs: { env: "WRITER_MAX_WAIT_MS", flag: "writer-max-wait-ms", kind: "integer", fallback: "2", describe: "longest a trace waits for its batch, in ms" },
  writeTimeoutMs: { env: "WRITE_TIMEOUT_MS", flag: "write-timeout-ms", kind: "integer", fallback: "5000", describe: "longest wait for a commit before 503, in ms" },
  shutdownGraceMs: { env: "SHUTDOWN_GRACE_MS", flag: "shutdown-grace-ms", kind: "integer", fallback: "10000", describe: "on SIGTERM, time to finish before exiting, in ms" },
  headersTimeoutMs: { env: "HEADERS_TIMEOUT_MS", flag: "headers-timeout-ms", kind: "integer", fallback: "10000", describe: "longest a client may take to send request headers, in ms" },
  requestTimeoutMs: { env: "REQUEST_TIMEOUT_MS", flag: "request-timeout-ms", kind: "integer", fallback: "30000", describe: "longest a client may take to send a whole request, in ms (then 408)" },
  keepAliveTimeoutMs: { env: "KEEP_ALIVE_TIMEOUT_MS", flag: "keep-alive-timeout-ms", kind: "integer", fallback: "5000", describe: "idle HTTP/1.1 keep-alive connections are closed after this, in ms" },
  h2IdleTimeoutMs: { env: "H2_IDLE_TIMEOUT_MS", flag: "h2-idle-timeout-ms", kind: "integer", fallback: "120000", describe: "HTTP/2 connections with no frames for this long are closed, in ms" },
  h2MaxConcurrentStreams: { env: "H2_MAX_CONCURRENT_STREAMS", flag: "h2-max-concurrent-streams", kind: "integer", fallback: "100", describe: "most concurrent streams per HTTP/2 connection" },
  maxConnections: { env: "MAX_CONNECTIONS", flag: "max-connections", kind: "integer", fallback: "10000", describe: "most open connections; more are closed at once" },
  metricsPort: { env: "METRICS_PORT", flag: "metrics-port", kind: "integer", describe: "serve Prometheus /metrics on this port (unset: none)" },
  metricsToken: { env: "METRICS_TOKEN", flag: "metrics-token", kind: "string", describe: "serve /metrics on the main port to `Authorization: Bearer` this token" },
  otlpMetadataAttributes: { env: "OTLP_METADATA_ATTRIBUTES", flag: "otlp-metadata-attributes", kind: "string", describe: "OTLP span attributes kept as trace metadata, comma-separated ([docs/otlp.md](docs/otlp.md))" },
  directUnary: { env: "DIRECT_UNARY", flag: "direct-unary", kind: "boolean", fallback: "true", describe: "answer protobuf gRPC and Connect ingest calls on the direct path (false: connect-es answers all)" },
  otlpReader: { env: "OTLP_READER", flag: "otlp-reader", kind: "boolean", fallback: "true", describe: "read protobuf OTLP Exports with calltrace's reader (false: protobuf-es reads all)" },
  importFastPath: { env: "IMPORT_FAST_PATH", flag: "import-fast-path", kind: "boolean", fallback: "true", describe: "`traces import` reads exported JSONL and CSV rows on its fast path (false: every row through the API's generic reader)" },
  oidcIssuer: { env: "OIDC_ISSUER", flag: "oidc-issuer", kind: "string", describe: "OpenID Connect issuer URL for single sign-on ([docs/teams.md](docs/teams.md#single-sign-on)); unset: no SSO" },
  oidcClientId: { env: "OIDC_CLIENT_ID", flag: "oidc-client-id", kind: "string", describe: "client id registered at the OpenID provider (with OIDC_ISSUER)" },
  oidcClientSecret: { env: "OIDC_CLIENT_SECRET", flag: "oidc-client-secret", kind: "string", describe: "client secret registered at the OpenID provider (with OIDC_ISSUER)" },
  oidcRedirectUrl: { env: "OIDC_REDIRECT_URL", flag: "oidc-redirect-url", kind: "string", describe: "callback URL registered at the provider (unset: this server's address + `/auth/oidc/callback`)" },
  smtpUrl: { env: "SMTP_URL", flag: "smtp-url", kind: "string", describe: "SMTP server that mails invitation links, e.g. `smtp://user:pass@host:587` (unset: the dashboard shows the link to copy)" },
  smtpFrom: { env: "SMTP_FROM", flag: "smtp-from", kind: "string", fallback: "calltrace <calltrace@localhost>", describe: "From address of invitation mail (with SMTP_URL)" },
  publicUrl: { env: "PUBLIC_URL", flag: "public-url", kind: "string", describe: "the address browsers reach this service at, for links in mail and alerts (unset: the address each request came to)" },
  alertSecretKey: { env: "ALERT_SECRET_KEY", flag: "alert-secret-key", kind: "string", describe: "32 bytes in base64 that encrypt webhook secrets ([docs/alerts.md](docs/alerts.md#signing)); unset: kept in DATA_DIR, or in the MongoDB database" },
  alertPrivateUrls: { env: "ALERT_PRIVATE_URLS", flag: "alert-private-urls", kind: "boolean", fallback: "false", describe: "let webhook and Slack destinations point at loopback, private and link-local addresses (false: refused, against server-side request forgery)" },
  alertRetryBaseMs: { env: "ALERT_RETRY_BASE_MS", flag: "alert-retry-base-ms", kind: "integer", fallback: "5000", describe: "unit of the alert delivery retry schedule, in ms (0 s, 5 s, 5 min ... 10 h with 5000)" },
} as const satisfies Record<keyof Config, OptionSpec>;

export class ConfigError extends Error {}

/** parseArgs options for every config flag, so each CLI command accepts them. */
export function configFlags(): Record<string, { type: "string" | "boolean" }> {
  const flags: Record<string, { type: "string" | "boolean" }> = {};
  for (const spec of Object.values(configOptions)) {
    flags[spec.flag] = { type: spec.kind === "boolean" ? "boolean" : "string" };
  }
  return flags;
}

/** Resolves the configuration: a flag wins over its environment variable, which wins over the default. */
export function resolveConfig(
  flags: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): Config {
  const config: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(configOptions) as [keyof Config, OptionSpec][]) {
    const flagValue = flags[spec.flag];
    const raw = flagValue === undefined ? (env[spec.env] ?? spec.fallback) : String(flagValue);
    config[name] = raw === undefined || raw === "" ? undefined : convert(spec, raw);
  }
  return config as unknown as Config;
}

function convert(spec: OptionSpec, raw: string): string | number | boolean {
  switch (spec.kind) {
    case "string":
      return raw;
    case "boolean":
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new ConfigError(`${spec.env} / --${spec.flag}: expected true or false, got ${JSON.stringify(raw)}`);
    case "integer": {
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < 0) {
        throw new ConfigError(`${spec.env} / --${spec.flag}: expected a whole number >= 0, got ${JSON.stringify(raw)}`);
      }
      return n;
    }
  }
}

/** Parses argv with the config flags plus a command's own flags. */
export function parseCommandArgs<T extends Record<string, { type: "string" | "boolean"; multiple?: boolean }>>(
  argv: string[],
  own: T,
) {
  // allowNegative: a boolean option can be turned off with --no-<flag> (e.g. --no-signup-open).
  return parseArgs({ args: argv, options: { ...configFlags(), ...own }, allowPositionals: true, strict: true, allowNegative: true });
}
