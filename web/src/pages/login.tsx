import { Code, ConnectError } from "@connectrpc/connect";
import { useState } from "preact/hooks";
import type { Session } from "../../../gen/calltrace/v1/auth_service_pb.js";
import { auth, messageOf } from "../api.js";

/** An invitation being answered: its token goes with a sign-up, and its address is the one to use. */
export interface InvitationSignUp {
  token: string;
  email: string;
}

/**
 * Sign-up and log-in on one page; sign-up is hidden when the installation closed it (an invitation
 * opens it), and single sign-on is offered when the server has it.
 */
export function Login({
  signupOpen,
  ssoEnabled,
  onSignedIn,
  invitation,
}: { signupOpen: boolean; ssoEnabled: boolean; onSignedIn: (s: Session, signedUp: boolean) => void; invitation?: InvitationSignUp }) {
  const canSignUp = signupOpen || invitation !== undefined;
  const [mode, setMode] = useState<"login" | "signup">(canSignUp ? "signup" : "login");
  const [email, setEmail] = useState(invitation?.email ?? "");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [taken, setTaken] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r =
        mode === "signup" ? await auth.signUp({ email, password, invitationToken: invitation?.token ?? "" }) : await auth.logIn({ email, password });
      onSignedIn(r.session!, mode === "signup");
    } catch (e) {
      setError(messageOf(e));
      setTaken(e instanceof ConnectError && e.code === Code.AlreadyExists);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="login">
      {!invitation && (
        <>
          <h1>calltrace</h1>
          <p class="muted">LLM usage tracing: cost, tokens, latency and errors of every call.</p>
        </>
      )}
      {canSignUp && (
        <div class="tabs">
          <button type="button" class={mode === "signup" ? "active" : ""} aria-pressed={mode === "signup"} onClick={() => setMode("signup")}>
            Sign up
          </button>
          <button type="button" class={mode === "login" ? "active" : ""} aria-pressed={mode === "login"} onClick={() => setMode("login")}>
            Log in
          </button>
        </div>
      )}
      <form onSubmit={submit} class="card stack">
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete={mode === "signup" ? "new-password" : "current-password"}
            required
            minLength={mode === "signup" ? 10 : undefined}
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {mode === "signup" && (
          <p class="muted small">
            At least 10 characters. {invitation ? "You join the inviting organization." : "Your account starts on the free plan."}
          </p>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
            {mode === "signup" && taken && (
              <>
                {" "}
                <button type="button" class="link" onClick={() => setMode("login")}>
                  Log in
                </button>
              </>
            )}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {mode === "signup" ? "Create account" : "Log in"}
        </button>
        {/* The password hash takes seconds on purpose: say so, rather than a silent grey button. */}
        <p class="muted small" role="status" data-progress>
          {busy ? (mode === "signup" ? "Creating your account: securing the password takes a few seconds…" : "Checking your password…") : ""}
        </p>
      </form>
      {ssoEnabled && (
        <p class="card">
          <a href="/auth/oidc/start">Sign in with single sign-on</a>
        </p>
      )}
    </div>
  );
}
