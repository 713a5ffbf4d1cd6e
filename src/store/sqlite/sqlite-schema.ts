import type Database from "better-sqlite3";

/** Schema migrations, applied in order; PRAGMA user_version records how many ran. */
const migrations: string[] = [
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
];

/** Brings the database to the current schema; safe to run from several processes at once. */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma("user_version", { simple: true }) as number;
    for (let i = version; i < migrations.length; i++) db.exec(migrations[i]!);
    if (version < migrations.length) db.pragma(`user_version = ${migrations.length}`);
  }).immediate();
}
