import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useRef, useState } from "preact/hooks";
import { type ApiKey, KeyScope } from "../../../gen/calltrace/v1/account_service_pb.js";
import { account, messageOf } from "../api.js";
import { QueryStatus } from "../components/query-status.js";
import { ShownOnce } from "../components/shown-once.js";
import { Truncated } from "../components/truncated.js";
import { ago, count, dateTime, percent, utcDay } from "../format.js";
import { can, useTeam } from "../team.js";
import { useQuery } from "../use-query.js";
import { AccountSecurity } from "./account-security.js";
import { ProjectSettings } from "./project-settings.js";
import { ErrorNote } from "../components/outcome.js";

/** Keys' "Last used" is refreshed on this interval, so it shows a key in use without a reload. */
const refreshMs = 10_000;

/**
 * Settings: the project's name, retention and time zone, its plan and this month's usage, its API
 * keys (create, rename, revoke: members and above), and the user's own account.
 */
export function Settings() {
  const manage = can(useTeam().membership.role, "keys.manage");
  const info = useQuery(() => account.getAccount({}), [], refreshMs);
  const keys = useQuery(async () => (await account.listKeys({})).keys, [], refreshMs);
  const [created, setCreated] = useState<{ name: string; plaintext: string }>();
  const now = useNow(refreshMs);
  const reload = () => {
    keys.reload();
    info.reload();
  };
  const atLimit = info.data !== undefined && info.data.activeKeys >= info.data.planMaxKeys;

  return (
    <section class="settings">
      <h1>Settings</h1>
      <ProjectSettings />
      <QueryStatus state={info} what="the plan" />
      {info.data && (
        <div class="card" data-section="plan">
          <h2>Plan and usage</h2>
          <p>
            Plan <strong data-plan>{info.data.plan}</strong>: {count(info.data.planPerMinute)} requests per minute and{" "}
            {count(info.data.planPerMonth)} traces per month, for each API key, and up to {count(info.data.planMaxKeys)} active keys.
          </p>
          <p>
            This calendar month your keys sent <strong data-usage>{count(info.data.callsThisMonth)}</strong> traces; each key's count starts over on{" "}
            {utcDay(info.data.monthResetsAt)} at 00:00 UTC.
          </p>
        </div>
      )}

      <div class="card" data-section="keys">
        <h2>API keys</h2>
        {info.data && (
          <p class="muted small" data-key-count>
            {count(info.data.activeKeys)} of {count(info.data.planMaxKeys)} active keys in use.
          </p>
        )}
        {manage ? (
          <CreateKey
            onCreated={(k) => {
              setCreated(k);
              reload();
            }}
            limitMessage={
              atLimit && info.data
                ? `The ${info.data.plan} plan allows ${count(info.data.planMaxKeys)} active keys: revoke one you no longer use to create another.`
                : undefined
            }
          />
        ) : (
          <p class="muted small" data-keys-read-only>
            Your role lets you see this project's keys; members, admins and owners create and revoke them.
          </p>
        )}
        {created && <NewKey {...created} onDone={() => setCreated(undefined)} />}
        <QueryStatus state={keys} what="keys" />
        <div class="table-wrap">
          <table class="keys">
            <thead>
              <tr>
                <th>Name</th>
                <th>Key</th>
                <th>Scope</th>
                <th>Created (UTC)</th>
                <th>Last used</th>
                <th>Expires (UTC)</th>
                <th>Status</th>
                <th class="num">This month</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(keys.data ?? []).map((k) => (
                <KeyRow key={k.id} apiKey={k} now={now} perMonth={Number(info.data?.planPerMonth ?? 0)} manage={manage} onChanged={reload} />
              ))}
            </tbody>
          </table>
        </div>
        {keys.data?.length === 0 && <p class="muted pad">No keys yet{manage ? ": create one above" : ""}.</p>}
      </div>

      <div class="card" data-section="rotation">
        <h2>Rotating a key</h2>
        <ol>
          <li>Create a new key here, named for where it will be used.</li>
          <li>Put it in your applications' environment (for example <code>CALLTRACE_API_KEY</code>) and redeploy them.</li>
          <li>Watch the old key's "Last used" stop moving, then revoke it. Within 5 seconds every request with it gets 401.</li>
        </ol>
        <p class="muted small">Keys are secrets: keep them in environment variables or a secret store, never in source control.</p>
      </div>

      <AccountSecurity />
    </section>
  );
}

/** The current time, ticking on an interval, for texts such as "5 min ago". */
function useNow(intervalMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

function CreateKey({ onCreated, limitMessage }: { onCreated: (k: { name: string; plaintext: string }) => void; limitMessage: string | undefined }) {
  const [name, setName] = useState("");
  const [expires, setExpires] = useState("");
  const [scope, setScope] = useState(KeyScope.INGEST);
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    if (!name.trim()) {
      setError("Give the key a name.");
      return;
    }
    try {
      const r = await account.createKey({ name, scope, ...(expires ? { expiresAt: timestampFromDate(new Date(`${expires}T00:00:00Z`)) } : {}) });
      setName("");
      setExpires("");
      onCreated({ name: r.key?.name ?? name, plaintext: r.plaintext });
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <form class="row create-key" onSubmit={submit}>
      <label>
        Name
        <input
          name="key-name"
          class="wide"
          placeholder="e.g. production-api"
          required
          maxLength={100}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <label>
        Scope
        <select name="key-scope" value={scope} onChange={(e) => setScope(Number(e.currentTarget.value) as KeyScope)}>
          <option value={KeyScope.INGEST}>ingest: sends traces</option>
          <option value={KeyScope.READ}>read: reads traces and usage (read API)</option>
        </select>
      </label>
      <label>
        Stops working on (optional, 00:00 UTC)
        <input name="key-expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
      </label>
      <button type="submit" class="primary" disabled={limitMessage !== undefined}>
        Create key
      </button>
      {limitMessage && (
        <p class="notice" data-key-limit>
          {limitMessage}
        </p>
      )}
      <ErrorNote error={error} />
    </form>
  );
}

/** The plaintext, shown this once. */
function NewKey({ name, plaintext, onDone }: { name: string; plaintext: string; onDone: () => void }) {
  return (
    <ShownOnce
      inputId="new-key"
      secret={plaintext}
      onDone={onDone}
      hint={
        <>
          Keep it in an environment variable (for example <code>CALLTRACE_API_KEY</code>), never in source code or version control.
        </>
      }
    >
      <strong>Key "{name}" created.</strong>
    </ShownOnce>
  );
}

function KeyRow({
  apiKey: k,
  perMonth,
  now,
  manage,
  onChanged,
}: { apiKey: ApiKey; perMonth: number; now: number; manage: boolean; onChanged: () => void }) {
  const [mode, setMode] = useState<"idle" | "confirming" | "renaming">("idle");
  const [newName, setNewName] = useState(k.name);
  const [error, setError] = useState<string>();
  const revokeButton = useRef<HTMLButtonElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);
  const statusCell = useRef<HTMLTableCellElement>(null);
  const renameField = useRef<HTMLInputElement>(null);
  const nameCell = useRef<HTMLTableCellElement>(null);
  // Focus follows what the user is doing: into the confirmation, back to the button, or to the new status.
  const [focusTarget, setFocusTarget] = useState<"confirm" | "revoke" | "status" | "rename" | "name">();
  useEffect(() => {
    if (!focusTarget) return;
    ({ confirm: confirmButton, revoke: revokeButton, status: statusCell, rename: renameField, name: nameCell })[focusTarget].current?.focus();
    setFocusTarget(undefined);
  }, [focusTarget]);

  const revoke = async () => {
    try {
      await account.revokeKey({ keyId: k.id });
      setMode("idle");
      setFocusTarget("status");
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const rename = async (event: Event) => {
    event.preventDefault();
    try {
      await account.renameKey({ keyId: k.id, name: newName });
      setMode("idle");
      setError(undefined);
      setFocusTarget("name");
      onChanged();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const used = Number(k.callsThisMonth);
  const expired = k.expiresAt !== undefined && timestampDate(k.expiresAt).getTime() <= now;
  const status = k.revokedAt ? "revoked" : expired ? "expired" : "active";
  return (
    <tr data-key-id={k.id} data-key-name={k.name}>
      <td ref={nameCell} tabIndex={-1} class="key-name">
        {mode === "renaming" ? (
          <form class="row" onSubmit={rename}>
            <input
              ref={renameField}
              name="rename"
              aria-label={`New name for ${k.name}`}
              required
              maxLength={100}
              value={newName}
              onInput={(e) => setNewName(e.currentTarget.value)}
            />
            <button type="submit">Save</button>
            <button
              type="button"
              class="link"
              onClick={() => {
                setMode("idle");
                setNewName(k.name);
                setFocusTarget("name");
              }}
            >
              Cancel
            </button>
          </form>
        ) : (
          <Truncated text={k.name} />
        )}
      </td>
      <td>
        <code>ct_{k.prefix}…</code>
      </td>
      <td data-scope>{k.scope === KeyScope.READ ? "read" : "ingest"}</td>
      <td class="nowrap">{dateTime(k.createdAt).slice(0, 16)}</td>
      <td class="nowrap" data-last-used title={k.lastUsedAt ? dateTime(k.lastUsedAt) : undefined}>
        {ago(k.lastUsedAt, now)}
      </td>
      <td class="nowrap">{k.expiresAt ? dateTime(k.expiresAt).slice(0, 16) : "never"}</td>
      <td ref={statusCell} tabIndex={-1}>
        <span class={`status ${status === "active" ? "success" : "error"}`}>{status}</span>
      </td>
      <td class="num" data-month title={perMonth ? `${percent(used, perMonth)} of ${count(perMonth)}` : ""}>
        {count(used)}
        {perMonth > 0 && <span class="muted small"> / {count(perMonth)}</span>}
      </td>
      <td class="actions">
        {manage && mode === "idle" && (
          <button
            type="button"
            class="link"
            onClick={() => {
              setMode("renaming");
              setFocusTarget("rename");
            }}
          >
            Rename<span class="sr-only"> {k.name}</span>
          </button>
        )}
        {manage &&
          !k.revokedAt &&
          (mode === "confirming" ? (
            <span class="confirm">
              Revoke "{k.name}"? Applications using it stop working.{" "}
              <button type="button" class="danger" ref={confirmButton} onClick={revoke}>
                Yes, revoke
              </button>{" "}
              <button
                type="button"
                class="link"
                onClick={() => {
                  setMode("idle");
                  setFocusTarget("revoke");
                }}
              >
                Cancel
              </button>
            </span>
          ) : (
            mode === "idle" && (
              <button
                type="button"
                ref={revokeButton}
                onClick={() => {
                  setMode("confirming");
                  setFocusTarget("confirm");
                }}
              >
                Revoke…
              </button>
            )
          ))}
        {error && (
          <span class="error" role="alert">
            {error}
          </span>
        )}
      </td>
    </tr>
  );
}
