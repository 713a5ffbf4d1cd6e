import { useState } from "preact/hooks";
import type { ApiKey } from "../../../gen/calltrace/v1/account_service_pb.js";
import { account, messageOf } from "../api.js";
import { count, dateTime, percent, utcDay } from "../format.js";
import { useQuery } from "../use-query.js";

/** Settings: the plan and this month's usage, and the API keys (create, list, revoke). */
export function Settings() {
  const info = useQuery(() => account.getAccount({}), []);
  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const [created, setCreated] = useState<{ name: string; plaintext: string }>();
  const reload = () => {
    keys.reload();
    info.reload();
  };

  return (
    <section class="settings">
      <h1>Settings</h1>
      {info.data && (
        <div class="card" data-section="plan">
          <h2>Plan and usage</h2>
          <p>
            Plan <strong data-plan>{info.data.plan}</strong>: {count(info.data.planPerMinute)} requests per minute and{" "}
            {count(info.data.planPerMonth)} traces per month, for each API key.
          </p>
          <p>
            This calendar month your keys sent <strong data-usage>{count(info.data.callsThisMonth)}</strong> traces; each key's count starts over on{" "}
            {utcDay(info.data.monthResetsAt)} at 00:00 UTC.
          </p>
        </div>
      )}

      <div class="card" data-section="keys">
        <h2>API keys</h2>
        <CreateKey onCreated={(k) => (setCreated(k), reload())} />
        {created && <NewKey {...created} onDone={() => setCreated(undefined)} />}
        {keys.error && <p class="error">{keys.error}</p>}
        <table class="keys">
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Status</th>
              <th class="num">This month</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(keys.data ?? []).map((k) => (
              <KeyRow key={k.id} apiKey={k} perMonth={Number(info.data?.planPerMonth ?? 0)} onRevoked={reload} />
            ))}
          </tbody>
        </table>
        {keys.data?.length === 0 && <p class="muted pad">No keys yet: create one above.</p>}
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
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: { name: string; plaintext: string }) => void }) {
  const [name, setName] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const r = await account.createKey({ name });
      setName("");
      onCreated({ name: r.key?.name ?? name, plaintext: r.plaintext });
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <form class="row" onSubmit={submit}>
      <input name="key-name" class="wide" placeholder="Key name, e.g. production-api" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <button type="submit" class="primary">
        Create key
      </button>
      {error && <span class="error">{error}</span>}
    </form>
  );
}

/** The plaintext, shown this once. */
function NewKey({ name, plaintext, onDone }: { name: string; plaintext: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(plaintext);
    } catch {
      // No clipboard API (an insecure context): select the text so the user can copy it.
      const field = document.getElementById("new-key") as HTMLInputElement | null;
      field?.select();
      document.execCommand("copy");
    }
    setCopied(true);
  };
  return (
    <div class="new-key" role="status">
      <p>
        <strong>Key "{name}" created.</strong> Copy it now: it is shown only this once and cannot be recovered.
      </p>
      <div class="row">
        <input id="new-key" readOnly value={plaintext} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" class="link" onClick={onDone}>
          Done
        </button>
      </div>
      <p class="warning">
        Keep it in an environment variable (for example <code>CALLTRACE_API_KEY</code>), never in source code or version control.
      </p>
    </div>
  );
}

function KeyRow({ apiKey: k, perMonth, onRevoked }: { apiKey: ApiKey; perMonth: number; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  const revoke = async () => {
    try {
      await account.revokeKey({ keyId: k.id });
      setConfirming(false);
      onRevoked();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const used = Number(k.callsThisMonth);
  return (
    <tr data-key-id={k.id} data-key-name={k.name}>
      <td>{k.name}</td>
      <td>
        <code>ct_{k.prefix}…</code>
      </td>
      <td class="nowrap">{dateTime(k.createdAt)}</td>
      <td class="nowrap">{k.lastUsedAt ? dateTime(k.lastUsedAt) : "never"}</td>
      <td>
        <span class={`status ${k.revokedAt ? "error" : "success"}`}>{k.revokedAt ? "revoked" : "active"}</span>
      </td>
      <td class="num" title={perMonth ? `${percent(used, perMonth)} of ${count(perMonth)}` : ""}>
        {count(used)}
        {perMonth > 0 && <span class="muted small"> / {count(perMonth)}</span>}
      </td>
      <td class="actions">
        {!k.revokedAt &&
          (confirming ? (
            <span class="confirm">
              Revoke "{k.name}"? Applications using it stop working.{" "}
              <button type="button" class="danger" onClick={revoke}>
                Yes, revoke
              </button>{" "}
              <button type="button" class="link" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" onClick={() => setConfirming(true)}>
              Revoke…
            </button>
          ))}
        {error && <span class="error">{error}</span>}
      </td>
    </tr>
  );
}
