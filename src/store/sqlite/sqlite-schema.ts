import type Database from "better-sqlite3";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";

/**
 * The user index's columns (D82): its key, then what the aggregate reads of a user's calls read
 * (the status as its flag: an index holding `failed` does not cover the virtual `status`), and
 * the numbers of the call's tag set (D83) and metadata set (D86).
 */
const userIndexColumns =
  "project_num, user_id, received_at, provider_num, model_num, key_num, failed, latency_ms, cost_usd, tokens_in, tokens_out, price_check, tags_num, metadata_num";

/** The keys of the indexes of traces sorted by cost, latency and tokens (D87: the rowid, `seq`, ends every entry already). */
const sortIndexColumns = {
  cost: "project_num, cost_usd",
  latency: "project_num, latency_ms",
  tokens: "project_num, (tokens_in + tokens_out)",
};

/** Schema migrations, applied in order; PRAGMA user_version records how many ran. Exported for the tests that make an older release's database. */
export const migrations: readonly string[] = [
  `CREATE TABLE accounts (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     plan TEXT NOT NULL,
     created_at INTEGER NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     name TEXT NOT NULL,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     created_at INTEGER NOT NULL,
     revoked_at INTEGER,
     last_used_at INTEGER
   );
   CREATE INDEX api_keys_account ON api_keys(account_id);
   CREATE INDEX api_keys_prefix ON api_keys(prefix);
   CREATE TABLE traces (
     seq INTEGER PRIMARY KEY,
     received_at INTEGER NOT NULL,
     key_id TEXT NOT NULL,
     account_id TEXT NOT NULL,
     country TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     latency_ms INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     status TEXT NOT NULL,
     error TEXT
   );
   CREATE INDEX traces_received ON traces(received_at);
   CREATE INDEX traces_account_received ON traces(account_id, received_at);
   CREATE TABLE idempotency (
     key_id TEXT NOT NULL,
     idempotency_key TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (key_id, idempotency_key)
   ) WITHOUT ROWID;
   CREATE INDEX idempotency_created ON idempotency(created_at);`,
  // Dashboard users and their sessions (src/store/sqlite/sqlite-user-store.ts).
  `CREATE TABLE users (
     id TEXT PRIMARY KEY,
     email TEXT NOT NULL UNIQUE,
     password_hash TEXT NOT NULL,
     account_id TEXT NOT NULL REFERENCES accounts(id),
     created_at INTEGER NOT NULL
   );
   CREATE INDEX users_account ON users(account_id);
   CREATE TABLE sessions (
     token_hash TEXT PRIMARY KEY,
     user_id TEXT NOT NULL REFERENCES users(id),
     account_id TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX sessions_expires ON sessions(expires_at);`,
  // The dashboard's reads (src/store/sqlite/sqlite-trace-reader.ts): keyset pages per filter, and
  // daily roll-ups kept in the same transaction as the traces, so a 30-day overview reads
  // thousands of roll-up rows instead of a million traces. Each primary key lists the columns in
  // the order reads group by them, so SQLite groups while scanning, without sorting; key_id comes
  // last, as a filter only. latency_bucket() is registered by openSqliteStore before migrating.
  `CREATE INDEX traces_account_key_received ON traces(account_id, key_id, received_at);
   CREATE INDEX traces_account_model_received ON traces(account_id, model, received_at);
   CREATE INDEX traces_account_status_received ON traces(account_id, status, received_at);
   CREATE TABLE usage_daily (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     status TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, provider, model, status, key_id)
   ) WITHOUT ROWID;
   CREATE TABLE usage_country_daily (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     country TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     status TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, country, provider, model, status, key_id)
   ) WITHOUT ROWID;
   CREATE TABLE latency_daily (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     bucket INTEGER NOT NULL,
     status TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, provider, model, bucket, status, key_id)
   ) WITHOUT ROWID;
   INSERT INTO usage_daily
     SELECT account_id, received_at / 86400000, provider, model, status, key_id, COUNT(*), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out)
     FROM traces GROUP BY 1, 2, 3, 4, 5, 6;
   INSERT INTO usage_country_daily
     SELECT account_id, received_at / 86400000, country, provider, model, status, key_id, COUNT(*), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out)
     FROM traces GROUP BY 1, 2, 3, 4, 5, 6, 7;
   INSERT INTO latency_daily
     SELECT account_id, received_at / 86400000, provider, model, latency_bucket(latency_ms), status, key_id, COUNT(*)
     FROM traces GROUP BY 1, 2, 3, 4, 5, 6, 7;`,
  // Latency per day and model over every key and status: what the unfiltered overview reads,
  // a sixth of latency_daily's rows with three keys and two statuses.
  `CREATE TABLE latency_daily_all (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     bucket INTEGER NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, provider, model, bucket)
   ) WITHOUT ROWID;
   INSERT INTO latency_daily_all
     SELECT account_id, day, provider, model, bucket, SUM(calls) FROM latency_daily GROUP BY 1, 2, 3, 4, 5;`,
  // What a trace may carry besides the spec's fields: cache and reasoning tokens, the server's own
  // price, where it came from (OTLP ids and service), and who and what it was for. Empty values
  // are NULL; tags and metadata are JSON text. OTLP spans of one trace are looked up together
  // (one LLM call reported by nested spans is stored once).
  `ALTER TABLE traces ADD COLUMN tokens_cached_in INTEGER;
   ALTER TABLE traces ADD COLUMN tokens_cache_write INTEGER;
   ALTER TABLE traces ADD COLUMN tokens_reasoning INTEGER;
   ALTER TABLE traces ADD COLUMN server_cost_usd REAL;
   ALTER TABLE traces ADD COLUMN price_check INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE traces ADD COLUMN source INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE traces ADD COLUMN otlp_trace_id TEXT;
   ALTER TABLE traces ADD COLUMN otlp_span_id TEXT;
   ALTER TABLE traces ADD COLUMN otlp_parent_span_id TEXT;
   ALTER TABLE traces ADD COLUMN service_name TEXT;
   ALTER TABLE traces ADD COLUMN user_id TEXT;
   ALTER TABLE traces ADD COLUMN session_id TEXT;
   ALTER TABLE traces ADD COLUMN tags TEXT;
   ALTER TABLE traces ADD COLUMN metadata TEXT;
   ALTER TABLE traces ADD COLUMN environment TEXT;
   ALTER TABLE traces ADD COLUMN ttft_ms INTEGER;
   CREATE INDEX traces_account_otlp_trace ON traces(account_id, otlp_trace_id) WHERE otlp_trace_id IS NOT NULL;`,
  // Account management: optional key expiry, and sessions listed per user with their browser.
  `ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
   ALTER TABLE sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
   CREATE INDEX sessions_user ON sessions(user_id);`,
  // The key that trace ids are encrypted with (src/store/trace-id.ts), made once per database.
  `CREATE TABLE store_secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
   INSERT INTO store_secrets VALUES ('trace_id_key', randomblob(16));`,
  // Attribution (src/store/sqlite/sqlite-trace-reader.ts): pages of one user or session, pages
  // sorted by cost, latency or tokens (keyset on the sort value and seq), and daily roll-ups per
  // attribute value, kept in the writer's transaction like usage_daily. A dimension is `user`,
  // `session`, `environment`, `service`, `tag` (a trace counts once per distinct tag),
  // `metadataKey` (once per key it carries) or `m:<key>` (the values of one metadata key); the
  // empty value is the traces without one, except for `m:<key>`, whose traces without the key are
  // all traces less the key's `metadataKey` row. Latency per group is read only for the groups a
  // page shows, through the primary key.
  `CREATE INDEX traces_account_user_received ON traces(account_id, user_id, received_at) WHERE user_id IS NOT NULL;
   CREATE INDEX traces_account_session_received ON traces(account_id, session_id, received_at) WHERE session_id IS NOT NULL;
   CREATE INDEX traces_account_cost ON traces(account_id, cost_usd, seq);
   CREATE INDEX traces_account_latency ON traces(account_id, latency_ms, seq);
   CREATE INDEX traces_account_tokens ON traces(account_id, (tokens_in + tokens_out), seq);
   CREATE TABLE group_daily (
     account_id TEXT NOT NULL,
     dimension TEXT NOT NULL,
     value TEXT NOT NULL,
     day INTEGER NOT NULL,
     status TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     PRIMARY KEY (account_id, dimension, value, day, status)
   ) WITHOUT ROWID;
   CREATE TABLE group_latency_daily (
     account_id TEXT NOT NULL,
     dimension TEXT NOT NULL,
     value TEXT NOT NULL,
     day INTEGER NOT NULL,
     bucket INTEGER NOT NULL,
     status TEXT NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, dimension, value, day, bucket, status)
   ) WITHOUT ROWID;
   CREATE TEMP VIEW trace_groups AS
     SELECT seq, 'user' AS dimension, COALESCE(user_id, '') AS value FROM traces
     UNION ALL SELECT seq, 'session', COALESCE(session_id, '') FROM traces
     UNION ALL SELECT seq, 'environment', COALESCE(environment, '') FROM traces
     UNION ALL SELECT seq, 'service', COALESCE(service_name, json_extract(metadata, '$.service'), '') FROM traces
     UNION ALL SELECT DISTINCT seq, 'tag', COALESCE(tag.value, '') FROM traces LEFT JOIN json_each(traces.tags) AS tag
     UNION ALL SELECT seq, 'metadataKey', COALESCE(entry.key, '') FROM traces LEFT JOIN json_each(traces.metadata) AS entry
     UNION ALL SELECT seq, 'm:' || entry.key, entry.value FROM traces JOIN json_each(traces.metadata) AS entry;
   INSERT INTO group_daily
     SELECT t.account_id, g.dimension, g.value, t.received_at / 86400000, t.status, COUNT(*), SUM(t.cost_usd), SUM(t.tokens_in), SUM(t.tokens_out)
     FROM trace_groups g JOIN traces t ON t.seq = g.seq GROUP BY 1, 2, 3, 4, 5;
   INSERT INTO group_latency_daily
     SELECT t.account_id, g.dimension, g.value, t.received_at / 86400000, latency_bucket(t.latency_ms), t.status, COUNT(*)
     FROM trace_groups g JOIN traces t ON t.seq = g.seq GROUP BY 1, 2, 3, 4, 5, 6;
   DROP VIEW trace_groups;`,
  // The dashboard's counts of calls the server could not price or priced differently from the
  // client, kept with the other daily sums. Traces stored before were not checked: 0 is right.
  `ALTER TABLE usage_daily ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE usage_daily ADD COLUMN mismatched INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE usage_country_daily ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE usage_country_daily ADD COLUMN mismatched INTEGER NOT NULL DEFAULT 0;`,
  // The same counts per attribute value, so a group's totals say them too.
  `ALTER TABLE group_daily ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE group_daily ADD COLUMN mismatched INTEGER NOT NULL DEFAULT 0;`,
  // The X-Quota-Remaining of a claim's first answer, which its replays answer again (D23); NULL
  // for claims made before, and for writes that sent no quota headers (OTLP spans).
  `ALTER TABLE idempotency ADD COLUMN quota_remaining INTEGER;`,
  // group_daily keyed by value, then status, then day: a group-by over a range reads one
  // dimension's rows in the order it groups them (measured with 10,000 users over 30 days: 55 ms
  // where the day-first key made SQLite sort 300,000 rows, 460 ms). The range is checked per row.
  `CREATE TABLE group_daily_by_value (
     account_id TEXT NOT NULL,
     dimension TEXT NOT NULL,
     value TEXT NOT NULL,
     day INTEGER NOT NULL,
     status TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     unpriced INTEGER NOT NULL DEFAULT 0,
     mismatched INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (account_id, dimension, value, status, day)
   ) WITHOUT ROWID;
   INSERT INTO group_daily_by_value SELECT * FROM group_daily;
   DROP TABLE group_daily;
   ALTER TABLE group_daily_by_value RENAME TO group_daily;`,
  // An OTLP call is deduplicated by its own row (D37): its idempotency key (src/otlp/llm-call.ts)
  // is kept with it, unique per account, instead of a claim row per span in idempotency, which
  // cost a third of a span's write. Calls claimed before stay claimed until their claims expire:
  // legacy_otlp_claims says until when the writer still reads them (no row: none to read).
  `ALTER TABLE traces ADD COLUMN otlp_call_key TEXT;
   CREATE UNIQUE INDEX traces_account_otlp_call ON traces(account_id, otlp_call_key) WHERE otlp_call_key IS NOT NULL;
   CREATE TABLE legacy_otlp_claims (until INTEGER NOT NULL);
   INSERT INTO legacy_otlp_claims
     SELECT MAX(created_at) + 86400000 FROM idempotency WHERE idempotency_key LIKE 'otlp:%' HAVING COUNT(*) > 0;`,
  // An OTLP call's key is unique per account and start second of its span (D44), so that new keys
  // land beside each other at the index's end instead of at random places: a retried span has the
  // same start, and the writer looks for a second instrumentation's span of the same call (which
  // starts within a second) in the seconds either side. Calls stored before have no start: their
  // keys sort first (NULL), where the writer looks them up until legacy_otlp_calls.until, 24 hours
  // on, the 24 hours in which docs/otlp.md promises that a retried Export stores nothing twice.
  `ALTER TABLE traces ADD COLUMN otlp_start_s INTEGER;
   DROP INDEX traces_account_otlp_call;
   CREATE UNIQUE INDEX traces_account_otlp_start_call ON traces(account_id, otlp_start_s, otlp_call_key) WHERE otlp_call_key IS NOT NULL;
   CREATE TABLE legacy_otlp_calls (until INTEGER NOT NULL);
   INSERT INTO legacy_otlp_calls
     SELECT CAST(strftime('%s', 'now') AS INTEGER) * 1000 + 86400000 WHERE EXISTS (SELECT 1 FROM traces WHERE otlp_call_key IS NOT NULL);`,
  // Billing modes (docs/pricing.md): the tier a call was billed at and the parts of its counts
  // priced at their own rates. NULL where a trace does not say.
  `ALTER TABLE traces ADD COLUMN service_tier TEXT;
   ALTER TABLE traces ADD COLUMN tokens_cache_write_1h INTEGER;
   ALTER TABLE traces ADD COLUMN tokens_audio_in INTEGER;
   ALTER TABLE traces ADD COLUMN tokens_audio_out INTEGER;
   ALTER TABLE traces ADD COLUMN web_search_requests INTEGER;`,
  // Teams (D50, docs/teams.md): each account becomes a project of an organization of its own, with
  // the same id, so no trace, key or roll-up row is rewritten; its users become the organization's
  // owners. Users and sessions lose the account (a rebuild: SQLite cannot drop a referenced column).
  // Keys gain a scope; every key so far could only send traces.
  `ALTER TABLE accounts RENAME TO projects;
   ALTER TABLE projects ADD COLUMN organization_id TEXT NOT NULL DEFAULT '';
   ALTER TABLE projects ADD COLUMN retention_days INTEGER;
   ALTER TABLE projects ADD COLUMN time_zone TEXT NOT NULL DEFAULT '';
   CREATE INDEX projects_organization ON projects(organization_id, created_at);
   CREATE TABLE organizations (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     join_domain TEXT NOT NULL DEFAULT '',
     join_role TEXT NOT NULL DEFAULT 'member'
   );
   CREATE INDEX organizations_join_domain ON organizations(join_domain) WHERE join_domain <> '';
   CREATE TABLE memberships (
     organization_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     role TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     PRIMARY KEY (organization_id, user_id)
   ) WITHOUT ROWID;
   CREATE INDEX memberships_user ON memberships(user_id);
   CREATE TABLE invitations (
     id TEXT PRIMARY KEY,
     organization_id TEXT NOT NULL,
     email TEXT NOT NULL,
     role TEXT NOT NULL,
     token_hash TEXT NOT NULL UNIQUE,
     invited_by TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL,
     accepted_at INTEGER,
     revoked_at INTEGER
   );
   CREATE INDEX invitations_organization ON invitations(organization_id, created_at);
   CREATE TABLE audit_log (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     organization_id TEXT NOT NULL,
     project_id TEXT NOT NULL,
     actor TEXT NOT NULL,
     action TEXT NOT NULL,
     target TEXT NOT NULL,
     details TEXT NOT NULL,
     at INTEGER NOT NULL
   );
   CREATE INDEX audit_log_organization ON audit_log(organization_id, seq);
   ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'ingest';
   INSERT INTO organizations (id, name, created_at) SELECT 'org_' || substr(id, 5), name, created_at FROM projects;
   UPDATE projects SET organization_id = 'org_' || substr(id, 5);
   INSERT INTO memberships SELECT 'org_' || substr(account_id, 5), id, 'owner', created_at FROM users;
   CREATE TABLE users_teams (
     id TEXT PRIMARY KEY,
     email TEXT NOT NULL UNIQUE,
     password_hash TEXT NOT NULL,
     created_at INTEGER NOT NULL
   );
   INSERT INTO users_teams SELECT id, email, password_hash, created_at FROM users;
   CREATE TABLE sessions_teams (
     token_hash TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL,
     user_agent TEXT NOT NULL DEFAULT ''
   ) WITHOUT ROWID;
   INSERT INTO sessions_teams SELECT token_hash, user_id, created_at, expires_at, user_agent FROM sessions;
   DROP TABLE sessions;
   DROP TABLE users;
   ALTER TABLE users_teams RENAME TO users;
   ALTER TABLE sessions_teams RENAME TO sessions;
   CREATE INDEX sessions_expires ON sessions(expires_at);
   CREATE INDEX sessions_user ON sessions(user_id);`,
  // Alerts (src/store/sqlite/sqlite-alert-store.ts): rules and events as their protobuf JSON; the
  // outbox of deliveries with their attempt log, claimed per row (claimed_by, claimed_until).
  // Every table names its project in account_id, so deleting a project deletes them.
  `CREATE TABLE alert_rules (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX alert_rules_account ON alert_rules(account_id, created_at);
   CREATE TABLE alert_rule_state (rule_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, state TEXT NOT NULL) WITHOUT ROWID;
   CREATE TABLE alert_destinations (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     name TEXT NOT NULL,
     url TEXT NOT NULL,
     emails TEXT NOT NULL,
     secrets TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     failing_since INTEGER,
     disabled_at INTEGER,
     disabled_reason TEXT NOT NULL DEFAULT ''
   );
   CREATE INDEX alert_destinations_account ON alert_destinations(account_id, created_at);
   CREATE TABLE alert_events (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     account_id TEXT NOT NULL,
     rule_id TEXT NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX alert_events_account ON alert_events(account_id, seq);
   CREATE INDEX alert_events_rule ON alert_events(account_id, rule_id, seq);
   CREATE TABLE alert_deliveries (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     account_id TEXT NOT NULL,
     event_id TEXT NOT NULL,
     destination_id TEXT NOT NULL,
     state TEXT NOT NULL,
     next_attempt_at INTEGER NOT NULL,
     scheduled_attempts INTEGER NOT NULL DEFAULT 0,
     attempts TEXT NOT NULL DEFAULT '[]',
     resent INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL,
     claimed_by TEXT,
     claimed_until INTEGER NOT NULL DEFAULT 0
   );
   CREATE INDEX alert_deliveries_due ON alert_deliveries(next_attempt_at) WHERE state = 'pending';
   CREATE INDEX alert_deliveries_account ON alert_deliveries(account_id, seq);
   CREATE INDEX alert_deliveries_event ON alert_deliveries(event_id);
   CREATE TABLE alert_leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID;`,
  // A project's custom prices and its re-price jobs (docs/pricing.md). Both name the project in
  // account_id, so deleting the project deletes them with its other rows.
  `CREATE TABLE custom_prices (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     match_kind TEXT NOT NULL,
     pattern TEXT NOT NULL,
     price TEXT NOT NULL,
     effective_from INTEGER,
     effective_until INTEGER,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX custom_prices_account ON custom_prices(account_id, created_at);
   CREATE TABLE reprice_jobs (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL,
     range_from INTEGER NOT NULL,
     range_until INTEGER NOT NULL,
     state TEXT NOT NULL,
     total INTEGER NOT NULL,
     done INTEGER NOT NULL,
     changed INTEGER NOT NULL,
     cursor TEXT NOT NULL,
     error TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX reprice_jobs_state ON reprice_jobs(state);`,
  // A trace's call time (D58): received_at becomes where a trace is placed, its call time when it
  // carries one, so every index, page and roll-up places it there; arrived_at keeps its receipt
  // (NULL: the same as received_at). The monthly quota counts by receipt: the index finds the few
  // traces that arrived on another day than they are placed, which roll-ups count elsewhere.
  `ALTER TABLE traces ADD COLUMN arrived_at INTEGER;
   CREATE INDEX traces_key_arrived_apart ON traces(key_id, arrived_at) WHERE arrived_at / 86400000 <> received_at / 86400000;`,
  // Errors and runs (D59, docs/dashboard.md). A failed call keeps the error group it was counted
  // in (error_group_of: the masked message's id; past values_per_day() groups a project's day,
  // the other group, D54), indexed for the Traces page's group filter. error_groups names each
  // day's groups (the cap counts them), error_group_daily sums them by model and key, and
  // error_group_users by user (at most error_users_per_group() a day, the rest as other). runs sums
  // the calls of each OTLP trace or session (a call's span: run-id.ts's callSpanMs), read by recency
  // through (project, end). Existing
  // traces are grouped and summed here, in receive order, as the writer would have.
  `ALTER TABLE traces ADD COLUMN error_group TEXT;
   CREATE TABLE error_groups (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     group_id TEXT NOT NULL,
     message TEXT NOT NULL,
     PRIMARY KEY (account_id, day, group_id)
   ) WITHOUT ROWID;
   CREATE INDEX error_groups_group ON error_groups(account_id, group_id);
   CREATE TABLE error_group_daily (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     group_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     first_ms INTEGER NOT NULL,
     last_ms INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, group_id, provider, model, key_id)
   ) WITHOUT ROWID;
   CREATE TABLE error_group_users (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     group_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, group_id, user_id)
   ) WITHOUT ROWID;
   CREATE TABLE runs (
     account_id TEXT NOT NULL,
     run_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     errors INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     start_ms INTEGER NOT NULL,
     end_ms INTEGER NOT NULL,
     PRIMARY KEY (account_id, run_id)
   ) WITHOUT ROWID;
   CREATE INDEX runs_account_end ON runs(account_id, end_ms);
   UPDATE traces SET error_group = error_group_of(error) WHERE status = 'error';
   CREATE TEMP TABLE capped_groups AS
     SELECT account_id, day, group_id FROM (
       SELECT account_id, received_at / 86400000 AS day, error_group AS group_id,
         ROW_NUMBER() OVER (PARTITION BY account_id, received_at / 86400000 ORDER BY MIN(seq)) AS n
       FROM traces WHERE error_group IS NOT NULL GROUP BY 1, 2, 3)
     WHERE values_per_day() > 0 AND n > values_per_day();
   UPDATE traces SET error_group = char(0) || 'other' WHERE error_group IS NOT NULL AND EXISTS (
     SELECT 1 FROM capped_groups c WHERE c.account_id = traces.account_id AND c.day = traces.received_at / 86400000 AND c.group_id = traces.error_group);
   DROP TABLE capped_groups;
   CREATE INDEX traces_account_error_group ON traces(account_id, error_group, received_at) WHERE error_group IS NOT NULL;
   INSERT INTO error_groups
     SELECT account_id, received_at / 86400000, error_group, error_message(MIN(error)) FROM traces
     WHERE error_group IS NOT NULL AND error_group <> char(0) || 'other' GROUP BY 1, 2, 3;
   INSERT INTO error_group_daily
     SELECT account_id, received_at / 86400000, error_group, provider, model, key_id, COUNT(*), SUM(cost_usd), MIN(received_at), MAX(received_at)
     FROM traces WHERE error_group IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6;
   INSERT INTO error_group_users
     SELECT account_id, day, group_id, CASE WHEN n > error_users_per_group() THEN char(0) || 'other' ELSE user_id END, SUM(calls) FROM (
       SELECT account_id, received_at / 86400000 AS day, error_group AS group_id, user_id, COUNT(*) AS calls,
         ROW_NUMBER() OVER (PARTITION BY account_id, received_at / 86400000, error_group ORDER BY MIN(seq)) AS n
       FROM traces WHERE error_group IS NOT NULL AND user_id IS NOT NULL GROUP BY 1, 2, 3, 4)
     GROUP BY 1, 2, 3, 4;
   INSERT INTO runs
     SELECT account_id, CASE WHEN otlp_trace_id IS NOT NULL THEN 'otlp:' || otlp_trace_id ELSE 'session:' || session_id END,
       COUNT(*), SUM(status = 'error'), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out),
       MIN(CASE WHEN arrived_at IS NULL THEN received_at - latency_ms ELSE received_at END),
       MAX(CASE WHEN arrived_at IS NULL THEN received_at ELSE received_at + latency_ms END)
     FROM traces WHERE otlp_trace_id IS NOT NULL OR session_id IS NOT NULL GROUP BY 1, 2;`,
  // Alert evaluation's counters (src/store/scope-counters.ts): the scopes rules watch, since when
  // the writer counts them, and their cells per resolution (quarter hour, minute) and part (0 kept
  // by the writer, 1 back-filled from the traces committed before the watch began).
  `CREATE TABLE scope_watches (
     account_id TEXT NOT NULL,
     scope TEXT NOT NULL,
     since INTEGER NOT NULL,
     PRIMARY KEY (account_id, scope)
   ) WITHOUT ROWID;
   CREATE TABLE scope_cells (
     account_id TEXT NOT NULL,
     scope TEXT NOT NULL,
     resolution INTEGER NOT NULL,
     start INTEGER NOT NULL,
     part INTEGER NOT NULL,
     calls INTEGER NOT NULL,
     errors INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     unpriced INTEGER NOT NULL,
     PRIMARY KEY (account_id, scope, resolution, start, part)
   ) WITHOUT ROWID;
   CREATE TABLE scope_latency_cells (
     account_id TEXT NOT NULL,
     scope TEXT NOT NULL,
     start INTEGER NOT NULL,
     part INTEGER NOT NULL,
     bucket INTEGER NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, scope, start, part, bucket)
   ) WITHOUT ROWID;`,
  // `traces import` (docs/import.md): an imported trace's identity in its file (its exported id, or
  // its source's own id), unique per project and kept with the row, so a file imported again, any
  // time later, stores nothing twice; the 24-hour idempotency claims would forget it.
  `ALTER TABLE traces ADD COLUMN import_key TEXT;
   CREATE UNIQUE INDEX traces_account_import ON traces(account_id, import_key) WHERE import_key IS NOT NULL;`,
  // Bytes per trace (D65): the traces table, its indexes and the largest roll-ups name a project and
  // a key by a number of id_numbers (src/store/sqlite/sqlite-id-numbers.ts) in place of its text id,
  // repeated in every index entry. The status index keeps only failed calls (a status filter of
  // success reads the project's time index, nearly every row of which matches), and retention walks
  // the time index per project, so the global one goes. Tables rebuilt: a column's type is fixed.
  // group_latency_daily repeated group_daily's key per latency bucket: each group_daily row keeps
  // its calls per bucket instead, a JSON object of bucket to calls (the writer's add_latency(),
  // sqlite-usage-rollup.ts). A run is keyed by a flag (otlp) and its OTLP trace id or session id,
  // not by the text run id, whose prefix its row and the end index repeated.
  `CREATE TABLE id_numbers (num INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT account_id FROM traces;
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT key_id FROM traces;
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT account_id FROM group_daily;
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT account_id FROM group_latency_daily;
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT account_id FROM runs;
   CREATE TABLE traces_numbered (
     seq INTEGER PRIMARY KEY,
     received_at INTEGER NOT NULL,
     key_num INTEGER NOT NULL,
     project_num INTEGER NOT NULL,
     country TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     latency_ms INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     status TEXT NOT NULL,
     error TEXT,
     tokens_cached_in INTEGER,
     tokens_cache_write INTEGER,
     tokens_reasoning INTEGER,
     server_cost_usd REAL,
     price_check INTEGER NOT NULL DEFAULT 0,
     source INTEGER NOT NULL DEFAULT 0,
     otlp_trace_id TEXT,
     otlp_span_id TEXT,
     otlp_parent_span_id TEXT,
     service_name TEXT,
     user_id TEXT,
     session_id TEXT,
     tags TEXT,
     metadata TEXT,
     environment TEXT,
     ttft_ms INTEGER,
     otlp_call_key TEXT,
     otlp_start_s INTEGER,
     service_tier TEXT,
     tokens_cache_write_1h INTEGER,
     tokens_audio_in INTEGER,
     tokens_audio_out INTEGER,
     web_search_requests INTEGER,
     arrived_at INTEGER,
     error_group TEXT,
     import_key TEXT
   );
   INSERT INTO traces_numbered
     SELECT seq, received_at, (SELECT num FROM id_numbers WHERE id = key_id), (SELECT num FROM id_numbers WHERE id = account_id),
       country, provider, model, tokens_in, tokens_out, latency_ms, cost_usd, status, error, tokens_cached_in, tokens_cache_write,
       tokens_reasoning, server_cost_usd, price_check, source, otlp_trace_id, otlp_span_id, otlp_parent_span_id, service_name,
       user_id, session_id, tags, metadata, environment, ttft_ms, otlp_call_key, otlp_start_s, service_tier, tokens_cache_write_1h,
       tokens_audio_in, tokens_audio_out, web_search_requests, arrived_at, error_group, import_key
     FROM traces ORDER BY seq;
   DROP TABLE traces;
   ALTER TABLE traces_numbered RENAME TO traces;
   CREATE INDEX traces_account_received ON traces(project_num, received_at);
   CREATE INDEX traces_account_key_received ON traces(project_num, key_num, received_at);
   CREATE INDEX traces_account_model_received ON traces(project_num, model, received_at);
   CREATE INDEX traces_account_error_received ON traces(project_num, received_at) WHERE status = 'error';
   CREATE INDEX traces_account_otlp_trace ON traces(project_num, otlp_trace_id) WHERE otlp_trace_id IS NOT NULL;
   CREATE INDEX traces_account_user_received ON traces(project_num, user_id, received_at) WHERE user_id IS NOT NULL;
   CREATE INDEX traces_account_session_received ON traces(project_num, session_id, received_at) WHERE session_id IS NOT NULL;
   CREATE INDEX traces_account_cost ON traces(project_num, cost_usd, seq);
   CREATE INDEX traces_account_latency ON traces(project_num, latency_ms, seq);
   CREATE INDEX traces_account_tokens ON traces(project_num, (tokens_in + tokens_out), seq);
   CREATE UNIQUE INDEX traces_account_otlp_start_call ON traces(project_num, otlp_start_s, otlp_call_key) WHERE otlp_call_key IS NOT NULL;
   CREATE INDEX traces_key_arrived_apart ON traces(key_num, arrived_at) WHERE arrived_at / 86400000 <> received_at / 86400000;
   CREATE INDEX traces_account_error_group ON traces(project_num, error_group, received_at) WHERE error_group IS NOT NULL;
   CREATE UNIQUE INDEX traces_account_import ON traces(project_num, import_key) WHERE import_key IS NOT NULL;
   CREATE TABLE group_daily_numbered (
     project_num INTEGER NOT NULL,
     dimension TEXT NOT NULL,
     value TEXT NOT NULL,
     day INTEGER NOT NULL,
     status TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     unpriced INTEGER NOT NULL DEFAULT 0,
     mismatched INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (project_num, dimension, value, status, day)
   ) WITHOUT ROWID;
   INSERT INTO group_daily_numbered
     SELECT (SELECT num FROM id_numbers WHERE id = account_id), dimension, value, day, status, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched
     FROM group_daily;
   DROP TABLE group_daily;
   ALTER TABLE group_daily_numbered RENAME TO group_daily;
   ALTER TABLE group_daily ADD COLUMN latency TEXT NOT NULL DEFAULT '{}';
   UPDATE group_daily SET latency = (
     SELECT json_group_object(bucket, calls) FROM group_latency_daily l
     WHERE l.account_id = (SELECT id FROM id_numbers WHERE num = group_daily.project_num) AND l.dimension = group_daily.dimension
       AND l.value = group_daily.value AND l.day = group_daily.day AND l.status = group_daily.status);
   DROP TABLE group_latency_daily;
   CREATE TABLE runs_keyed (
     project_num INTEGER NOT NULL,
     otlp INTEGER NOT NULL,
     run_key TEXT NOT NULL,
     calls INTEGER NOT NULL,
     errors INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     start_ms INTEGER NOT NULL,
     end_ms INTEGER NOT NULL,
     PRIMARY KEY (project_num, otlp, run_key)
   ) WITHOUT ROWID;
   INSERT INTO runs_keyed
     SELECT (SELECT num FROM id_numbers WHERE id = account_id), run_id LIKE 'otlp:%', substr(run_id, instr(run_id, ':') + 1),
       calls, errors, cost_usd, tokens_in, tokens_out, start_ms, end_ms
     FROM runs;
   DROP TABLE runs;
   ALTER TABLE runs_keyed RENAME TO runs;
   CREATE INDEX runs_account_end ON runs(project_num, end_ms);`,
  // Bytes per trace (D65): a trace's tags and metadata are kept as SQLite's binary JSON (JSONB),
  // which the JSON functions read as they read text, without the quotes and separators of text.
  `UPDATE traces SET tags = jsonb(tags), metadata = jsonb(metadata) WHERE tags IS NOT NULL OR metadata IS NOT NULL;`,
  // The Overview under an environment (D67): usage per environment, day, provider, model, status
  // and key, with calls per latency bucket as group_daily keeps them, so the reads by model, day,
  // key and provider come from here and not from the range's traces. Only an environment its day
  // tracks (group_daily has its row, D54): a day that counted it under other is read from the traces.
  `CREATE TABLE usage_environment_daily (
     account_id TEXT NOT NULL,
     environment TEXT NOT NULL,
     day INTEGER NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     status TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     unpriced INTEGER NOT NULL,
     mismatched INTEGER NOT NULL,
     latency TEXT NOT NULL,
     PRIMARY KEY (account_id, environment, day, provider, model, status, key_id)
   ) WITHOUT ROWID;
   INSERT INTO usage_environment_daily
     SELECT (SELECT id FROM id_numbers WHERE num = project_num), environment, day, provider, model, status, (SELECT id FROM id_numbers WHERE num = key_num),
       SUM(calls), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out), SUM(unpriced), SUM(mismatched), json_group_object(bucket, calls)
     FROM (
       SELECT project_num, environment, received_at / 86400000 AS day, provider, model, status, key_num, CAST(latency_bucket(latency_ms) AS INTEGER) AS bucket,
         COUNT(*) AS calls, SUM(cost_usd) AS cost_usd, SUM(tokens_in) AS tokens_in, SUM(tokens_out) AS tokens_out,
         SUM(price_check = ${PriceCheck.UNPRICED}) AS unpriced, SUM(price_check = ${PriceCheck.MISMATCH}) AS mismatched
       FROM traces AS t WHERE environment <> '' AND EXISTS (SELECT 1 FROM group_daily AS g WHERE g.project_num = t.project_num
         AND g.dimension = 'environment' AND g.value = t.environment AND g.day = t.received_at / 86400000)
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8)
     GROUP BY 1, 2, 3, 4, 5, 6, 7;`,
  // Bytes per trace (D68): a trace's provider and model are numbers of id_numbers too (the row and
  // the model index held their text), and its status is `failed` (1 or 0, which SQLite stores in
  // the row's header alone); `status` stays readable as a virtual column computed from it, so
  // reads and the index of failed calls keep their text. Rebuilt: a column's type is fixed.
  `INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT provider FROM traces;
   INSERT OR IGNORE INTO id_numbers (id) SELECT DISTINCT model FROM traces;
   CREATE TABLE traces_numbered (
     seq INTEGER PRIMARY KEY,
     received_at INTEGER NOT NULL,
     key_num INTEGER NOT NULL,
     project_num INTEGER NOT NULL,
     country TEXT NOT NULL,
     provider_num INTEGER NOT NULL,
     model_num INTEGER NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     latency_ms INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     failed INTEGER NOT NULL,
     error TEXT,
     tokens_cached_in INTEGER,
     tokens_cache_write INTEGER,
     tokens_reasoning INTEGER,
     server_cost_usd REAL,
     price_check INTEGER NOT NULL DEFAULT 0,
     source INTEGER NOT NULL DEFAULT 0,
     otlp_trace_id TEXT,
     otlp_span_id TEXT,
     otlp_parent_span_id TEXT,
     service_name TEXT,
     user_id TEXT,
     session_id TEXT,
     tags TEXT,
     metadata TEXT,
     environment TEXT,
     ttft_ms INTEGER,
     otlp_call_key TEXT,
     otlp_start_s INTEGER,
     service_tier TEXT,
     tokens_cache_write_1h INTEGER,
     tokens_audio_in INTEGER,
     tokens_audio_out INTEGER,
     web_search_requests INTEGER,
     arrived_at INTEGER,
     error_group TEXT,
     import_key TEXT,
     status TEXT GENERATED ALWAYS AS (CASE failed WHEN 1 THEN 'error' ELSE 'success' END) VIRTUAL
   );
   INSERT INTO traces_numbered
     SELECT seq, received_at, key_num, project_num, country, (SELECT num FROM id_numbers WHERE id = provider),
       (SELECT num FROM id_numbers WHERE id = model), tokens_in, tokens_out, latency_ms, cost_usd, status = 'error', error,
       tokens_cached_in, tokens_cache_write, tokens_reasoning, server_cost_usd, price_check, source, otlp_trace_id, otlp_span_id,
       otlp_parent_span_id, service_name, user_id, session_id, tags, metadata, environment, ttft_ms, otlp_call_key, otlp_start_s,
       service_tier, tokens_cache_write_1h, tokens_audio_in, tokens_audio_out, web_search_requests, arrived_at, error_group, import_key
     FROM traces ORDER BY seq;
   DROP TABLE traces;
   ALTER TABLE traces_numbered RENAME TO traces;
   CREATE INDEX traces_account_received ON traces(project_num, received_at);
   CREATE INDEX traces_account_key_received ON traces(project_num, key_num, received_at);
   CREATE INDEX traces_account_model_received ON traces(project_num, model_num, received_at);
   CREATE INDEX traces_account_error_received ON traces(project_num, received_at) WHERE status = 'error';
   CREATE INDEX traces_account_otlp_trace ON traces(project_num, otlp_trace_id) WHERE otlp_trace_id IS NOT NULL;
   CREATE INDEX traces_account_user_received ON traces(project_num, user_id, received_at) WHERE user_id IS NOT NULL;
   CREATE INDEX traces_account_session_received ON traces(project_num, session_id, received_at) WHERE session_id IS NOT NULL;
   CREATE INDEX traces_account_cost ON traces(project_num, cost_usd, seq);
   CREATE INDEX traces_account_latency ON traces(project_num, latency_ms, seq);
   CREATE INDEX traces_account_tokens ON traces(project_num, (tokens_in + tokens_out), seq);
   CREATE UNIQUE INDEX traces_account_otlp_start_call ON traces(project_num, otlp_start_s, otlp_call_key) WHERE otlp_call_key IS NOT NULL;
   CREATE INDEX traces_key_arrived_apart ON traces(key_num, arrived_at) WHERE arrived_at / 86400000 <> received_at / 86400000;
   CREATE INDEX traces_account_error_group ON traces(project_num, error_group, received_at) WHERE error_group IS NOT NULL;
   CREATE UNIQUE INDEX traces_account_import ON traces(project_num, import_key) WHERE import_key IS NOT NULL;`,
  // The Errors view under a key, provider or model (D70): error_group_users keys a group's users by
  // provider, model and key too, as error_group_daily does, so the filtered view reads roll-ups and
  // not the range's failed calls. Rebuilt from the failed calls, each user as its day tracked it.
  `CREATE TABLE error_group_users_keyed (
     account_id TEXT NOT NULL,
     day INTEGER NOT NULL,
     group_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, day, group_id, user_id, provider, model, key_id)
   ) WITHOUT ROWID;
   INSERT INTO error_group_users_keyed
     SELECT a.id, t.received_at / 86400000, t.error_group,
       CASE WHEN EXISTS (SELECT 1 FROM error_group_users u WHERE u.account_id = a.id AND u.day = t.received_at / 86400000
         AND u.group_id = t.error_group AND u.user_id = t.user_id) THEN t.user_id ELSE char(0) || 'other' END,
       p.id, m.id, k.id, COUNT(*)
     FROM traces AS t JOIN id_numbers AS a ON a.num = t.project_num JOIN id_numbers AS p ON p.num = t.provider_num
       JOIN id_numbers AS m ON m.num = t.model_num JOIN id_numbers AS k ON k.num = t.key_num
     WHERE t.error_group IS NOT NULL AND t.user_id IS NOT NULL
     GROUP BY 1, 2, 3, 4, 5, 6, 7;
   DROP TABLE error_group_users;
   ALTER TABLE error_group_users_keyed RENAME TO error_group_users;`,
  // The parts of a day at a range's ends and the hourly trends (D73): usage per UTC hour (hours
  // since the epoch), environment, provider, model, status and key, with calls per latency bucket
  // as usage_environment_daily keeps them. The environment is the one its day counts it under
  // (D54): its own if group_daily tracks it, else other; '' for a trace without one.
  `CREATE TABLE usage_hourly (
     account_id TEXT NOT NULL,
     hour INTEGER NOT NULL,
     environment TEXT NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     status TEXT NOT NULL,
     key_id TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     unpriced INTEGER NOT NULL,
     mismatched INTEGER NOT NULL,
     latency TEXT NOT NULL,
     PRIMARY KEY (account_id, hour, environment, provider, model, status, key_id)
   ) WITHOUT ROWID;
   INSERT INTO usage_hourly
     SELECT (SELECT id FROM id_numbers WHERE num = project_num), hour, environment, (SELECT id FROM id_numbers WHERE num = provider_num),
       (SELECT id FROM id_numbers WHERE num = model_num), status, (SELECT id FROM id_numbers WHERE num = key_num),
       SUM(calls), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out), SUM(unpriced), SUM(mismatched), json_group_object(bucket, calls)
     FROM (
       SELECT project_num, received_at / 3600000 AS hour,
         CASE WHEN COALESCE(environment, '') = '' THEN '' WHEN EXISTS (SELECT 1 FROM group_daily AS g WHERE g.project_num = t.project_num
           AND g.dimension = 'environment' AND g.value = t.environment AND g.day = t.received_at / 86400000) THEN environment
           ELSE char(0) || 'other' END AS environment,
         provider_num, model_num, status, key_num, CAST(latency_bucket(latency_ms) AS INTEGER) AS bucket,
         COUNT(*) AS calls, SUM(cost_usd) AS cost_usd, SUM(tokens_in) AS tokens_in, SUM(tokens_out) AS tokens_out,
         SUM(price_check = ${PriceCheck.UNPRICED}) AS unpriced, SUM(price_check = ${PriceCheck.MISMATCH}) AS mismatched
       FROM traces AS t
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8)
     GROUP BY 1, 2, 3, 4, 5, 6, 7;`,
  // Runs by cost (D75): the (project, end) index carries each run's cost, so the dearest runs
  // ending in a range are found in the index alone, and only they are read from the table.
  `DROP INDEX runs_account_end;
   CREATE INDEX runs_account_end ON runs(project_num, end_ms, cost_usd);`,
  // The Overview's latency under an environment (D76): calls per latency bucket per environment,
  // day, provider and model, summed over keys and statuses as latency_daily_all is, one row per
  // bucket: read as rows, not by unpacking each usage_environment_daily row's JSON (json_each).
  `CREATE TABLE latency_environment_daily (
     account_id TEXT NOT NULL,
     environment TEXT NOT NULL,
     day INTEGER NOT NULL,
     provider TEXT NOT NULL,
     model TEXT NOT NULL,
     bucket INTEGER NOT NULL,
     calls INTEGER NOT NULL,
     PRIMARY KEY (account_id, environment, day, provider, model, bucket)
   ) WITHOUT ROWID;
   INSERT INTO latency_environment_daily
     SELECT account_id, environment, day, provider, model, CAST(b.key AS INTEGER), SUM(b.value)
     FROM usage_environment_daily, json_each(latency) AS b GROUP BY 1, 2, 3, 4, 5, 6;`,
  // group_daily keyed day before value (D78): a range's group-by reads only its days' values, not
  // every value of the retention; a value's point reads name its days (dayIn in sqlite-rollup-sql.ts).
  `CREATE TABLE group_daily_by_day (
     project_num INTEGER NOT NULL,
     dimension TEXT NOT NULL,
     value TEXT NOT NULL,
     day INTEGER NOT NULL,
     status TEXT NOT NULL,
     calls INTEGER NOT NULL,
     cost_usd REAL NOT NULL,
     tokens_in INTEGER NOT NULL,
     tokens_out INTEGER NOT NULL,
     unpriced INTEGER NOT NULL DEFAULT 0,
     mismatched INTEGER NOT NULL DEFAULT 0,
     latency TEXT NOT NULL DEFAULT '{}',
     PRIMARY KEY (project_num, dimension, day, value, status)
   ) WITHOUT ROWID;
   INSERT INTO group_daily_by_day
     SELECT project_num, dimension, value, day, status, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched, latency
     FROM group_daily ORDER BY project_num, dimension, day, value, status;
   DROP TABLE group_daily;
   ALTER TABLE group_daily_by_day RENAME TO group_daily;`,
  // The runs a large import leaves to after its rows (D81): the sequence numbers each of its
  // commits stored, until sqlitePendingRuns adds their calls to the runs table. Empty otherwise.
  `CREATE TABLE runs_pending (
     from_seq INTEGER NOT NULL,
     to_seq INTEGER NOT NULL
   );`,
  // A user's aggregates (D82): the user index carries every column the Overview's reads of a
  // user's calls group and sum, so each reads one range of the index, not a table row per call.
  // IF EXISTS: an import may have dropped it (D77). Its columns as D82 left them (tags_num came later).
  `DROP INDEX IF EXISTS traces_account_user_received;
   CREATE INDEX traces_account_user_received ON traces(project_num, user_id, received_at, provider_num, model_num, key_num, failed,
     latency_ms, cost_usd, tokens_in, tokens_out, price_check) WHERE user_id IS NOT NULL;`,
  // A user's tags (D83): tag_sets numbers each project's distinct tags values (the JSONB the traces
  // keep), at most setsPerProject a project (sqlite-attribute-sets.ts), and a trace's tags_num names
  // its set (0: no tags), which the user index covers. NULL: stored before this or past the bound,
  // read from the row's JSON; old rows are not numbered here, which would rewrite the whole table.
  `ALTER TABLE traces ADD COLUMN tags_num INTEGER;
   CREATE TABLE tag_sets (num INTEGER PRIMARY KEY, project_num INTEGER NOT NULL, tags BLOB NOT NULL, UNIQUE (project_num, tags));
   DROP INDEX IF EXISTS traces_account_user_received;
   CREATE INDEX traces_account_user_received ON traces(project_num, user_id, received_at, provider_num, model_num, key_num, failed,
     latency_ms, cost_usd, tokens_in, tokens_out, price_check, tags_num) WHERE user_id IS NOT NULL;`,
  // A user's metadata (D86), as D83 did its tags: metadata_sets numbers each project's distinct
  // metadata values, and a trace's metadata_num (0: no metadata; NULL: before this or past the
  // bound, read from the row's JSON) is covered by the user index.
  `ALTER TABLE traces ADD COLUMN metadata_num INTEGER;
   CREATE TABLE metadata_sets (num INTEGER PRIMARY KEY, project_num INTEGER NOT NULL, metadata BLOB NOT NULL, UNIQUE (project_num, metadata));
   DROP INDEX IF EXISTS traces_account_user_received;
   CREATE INDEX traces_account_user_received ON traces(${userIndexColumns}) WHERE user_id IS NOT NULL;`,
  // The sort indexes without `seq` (D87): an index entry ends with the row's rowid, which `seq` is,
  // so a (project, value, seq) key held it twice; ORDER BY value, seq reads either key in order.
  // IF EXISTS: an import may have dropped them (D77).
  `DROP INDEX IF EXISTS traces_account_cost;
   DROP INDEX IF EXISTS traces_account_latency;
   DROP INDEX IF EXISTS traces_account_tokens;
   CREATE INDEX traces_account_cost ON traces(${sortIndexColumns.cost});
   CREATE INDEX traces_account_latency ON traces(${sortIndexColumns.latency});
   CREATE INDEX traces_account_tokens ON traces(${sortIndexColumns.tokens});`,
];

/** Brings the database to the current schema; safe to run from several processes at once. */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma("user_version", { simple: true }) as number;
    for (let i = version; i < migrations.length; i++) db.exec(migrations[i]!);
    if (version < migrations.length) db.pragma(`user_version = ${migrations.length}`);
  }).immediate();
}

/**
 * The traces table's indexes a large import builds after its rows rather than with them (D77,
 * sqlite-deferred-indexes.ts), by name, each as `CREATE INDEX name ON` what follows: those whose
 * key puts consecutive traces on pages all over the index (a user, a session, a cost, a latency, a
 * token count). The unique indexes an import's duplicate checks read stay, and so do those ordered
 * by time, which a time-ordered import appends to. Each reads as the latest migration leaves it
 * (test/store/sqlite-deferred-indexes.test.ts checks), so a store that lacks one builds it at open.
 */
export const deferrableTraceIndexes: Readonly<Record<string, string>> = {
  traces_account_user_received: `traces(${userIndexColumns}) WHERE user_id IS NOT NULL`,
  traces_account_session_received: "traces(project_num, session_id, received_at) WHERE session_id IS NOT NULL",
  traces_account_cost: `traces(${sortIndexColumns.cost})`,
  traces_account_latency: `traces(${sortIndexColumns.latency})`,
  traces_account_tokens: `traces(${sortIndexColumns.tokens})`,
};
