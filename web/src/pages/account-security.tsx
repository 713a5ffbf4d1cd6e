import { useState } from "preact/hooks";
import { account, messageOf } from "../api.js";
import { base } from "../router.js";
import { dateTime } from "../format.js";
import { QueryStatus } from "../components/query-status.js";
import { useTeam } from "../team.js";
import { useQuery } from "../use-query.js";
import { ErrorNote, Outcome } from "../components/outcome.js";

/** After the session ends here: start the app over, at the log-in page. */
const signedOut = () => location.assign(base);

/**
 * The signed-in user's own account: password, sessions, and deleting the account. Both the
 * password change and the deletion ask for the password, so a user who signs in with single
 * sign-on only (no password) is told so instead.
 */
export function AccountSecurity() {
  const { session } = useTeam();
  if (!session.hasPassword) {
    return (
      <>
        <p class="card muted" data-sso-only>
          You sign in with single sign-on: this user has no password to change, and deleting it from here needs one.
        </p>
        <Sessions />
      </>
    );
  }
  return (
    <>
      <ChangePassword />
      <Sessions />
      <DeleteAccount />
    </>
  );
}

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const r = await account.changePassword({ currentPassword: current, newPassword: next });
      setCurrent("");
      setNext("");
      setResult({ ok: true, text: `Password changed. ${r.otherSessionsEnded} other session${r.otherSessionsEnded === 1 ? "" : "s"} logged out.` });
    } catch (e) {
      setResult({ ok: false, text: messageOf(e) });
    }
  };
  return (
    <form class="card stack narrow" data-section="password" onSubmit={submit}>
      <h2>Password</h2>
      <label>
        Current password
        <input name="current-password" type="password" autoComplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />
      </label>
      <label>
        New password (at least 10 characters)
        <input name="new-password" type="password" autoComplete="new-password" required minLength={10} value={next} onInput={(e) => setNext(e.currentTarget.value)} />
      </label>
      <p class="muted small">Every other session of yours is logged out; this one stays.</p>
      <button type="submit" class="primary">
        Change password
      </button>
      <Outcome result={result} />
    </form>
  );
}

function Sessions() {
  const sessions = useQuery(async () => (await account.listSessions({})).sessions, []);
  const [error, setError] = useState<string>();
  const everywhere = async () => {
    try {
      await account.logOutEverywhere({});
      signedOut();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <div class="card" data-section="sessions">
      <h2>Sessions</h2>
      <QueryStatus state={sessions} what="sessions" />
      <ul class="sessions">
        {(sessions.data ?? []).map((s) => (
          <li data-session={s.id}>
            <strong>{s.current ? "This browser" : s.userAgent || "Unknown browser"}</strong>
            {s.current && s.userAgent && <span class="muted small"> ({s.userAgent})</span>}
            <span class="muted small">
              {" "}
              · signed in {dateTime(s.createdAt)} · ends {dateTime(s.expiresAt)}
            </span>
          </li>
        ))}
      </ul>
      <button type="button" onClick={everywhere}>
        Log out everywhere
      </button>
      <ErrorNote error={error} />
    </div>
  );
}

function DeleteAccount() {
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      await account.deleteAccount({ password });
      signedOut();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <details class="card danger-zone" data-section="delete-account">
      <summary>Delete this account…</summary>
      <form class="stack narrow" onSubmit={submit}>
        <p>
          This deletes your user and takes you out of every organization. An organization whose only member you are is deleted with its
          projects, keys and traces (its keys stop working at once); of one with other members, transfer the ownership first. It cannot be undone.
        </p>
        <label>
          Your password, to confirm
          <input name="delete-password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button type="submit" class="danger">
          Delete account and all its data
        </button>
        <ErrorNote error={error} />
      </form>
    </details>
  );
}
