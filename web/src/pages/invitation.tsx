import { useState } from "preact/hooks";
import type { Session } from "../../../gen/calltrace/v1/auth_service_pb.js";
import type { GetInvitationResponse } from "../../../gen/calltrace/v1/team_service_pb.js";
import { auth, messageOf, team } from "../api.js";
import { QueryStatus } from "../components/query-status.js";
import { dateTime } from "../format.js";
import { base, navigate, projectBase } from "../router.js";
import { roleName } from "../team.js";
import { useQuery } from "../use-query.js";
import { Login } from "./login.js";
import { ErrorNote } from "../components/outcome.js";

/**
 * `/app/invite/<token>`: what the invitation is for, and the way in. Signed in with the invited
 * address: accept it. Signed out: log in (then accept) or sign up with it (which accepts it).
 */
export function InvitationPage({
  token,
  session,
  ssoEnabled,
  onSession,
}: { token: string; session: Session | null; ssoEnabled: boolean; onSession: (s: Session | null) => void }) {
  const invitation = useQuery(() => team.getInvitation({ token }), [token]);
  const data = invitation.data;
  return (
    <div class="login" data-invitation>
      <h1>Invitation</h1>
      <QueryStatus state={invitation} what="the invitation" />
      {invitation.error && <p>The link may be mistyped, already used, revoked or expired: ask whoever invited you for a new one.</p>}
      {data && (
        <>
          <p data-invitation-summary>
            You are invited to join <strong data-organization>{data.organizationName}</strong> as <strong data-role>{roleName(data.role)}</strong>, with
            the address <strong data-email>{data.email}</strong>.
          </p>
          <p class="muted small">The link works until {dateTime(data.expiresAt)} UTC, once.</p>
          {session ? (
            <Accept token={token} invitation={data} session={session} onSession={onSession} />
          ) : (
            <Login
              signupOpen={false}
              ssoEnabled={ssoEnabled}
              invitation={{ token, email: data.email }}
              onSignedIn={(s, signedUp) => {
                // A sign-up with the token has joined already; a log-in still has to accept.
                if (signedUp) navigate(s.accountId ? projectBase(s.accountId) : base, true);
                onSession(s);
              }}
            />
          )}
        </>
      )}
    </div>
  );
}

function Accept({
  token,
  invitation,
  session,
  onSession,
}: { token: string; invitation: GetInvitationResponse; session: Session; onSession: (s: Session | null) => void }) {
  const [error, setError] = useState<string>();
  if (session.email !== invitation.email) {
    const logOut = async () => {
      await auth.logOut({}).catch(() => undefined);
      onSession(null);
    };
    return (
      <div class="card stack">
        <p>
          You are signed in as <strong>{session.email}</strong>, but this invitation is for <strong>{invitation.email}</strong>. Log out, then log
          in or sign up with the invited address.
        </p>
        <button type="button" onClick={logOut}>
          Log out
        </button>
      </div>
    );
  }
  const accept = async () => {
    setError(undefined);
    try {
      const { organization } = await team.acceptInvitation({ token });
      const joined = (await team.listOrganizations({})).organizations.find((m) => m.organization?.id === organization?.id);
      const first = joined?.projects[0];
      navigate(first ? projectBase(first.id) : base);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <div class="card stack">
      <p>
        Signed in as <strong>{session.email}</strong>.
      </p>
      <button type="button" class="primary" onClick={accept}>
        Accept and join {invitation.organizationName}
      </button>
      <ErrorNote error={error} />
    </div>
  );
}
