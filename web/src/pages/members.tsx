import { useRef, useState } from "preact/hooks";
import { type CreateInvitationResponse, type Member, Role } from "../../../gen/calltrace/v1/team_service_pb.js";
import { messageOf, team as teams } from "../api.js";
import { ConfirmDelete } from "../components/confirm-delete.js";
import { copyText } from "../components/copy-text.js";
import { QueryStatus } from "../components/query-status.js";
import { dateTime } from "../format.js";
import { base, navigate } from "../router.js";
import { can, mayChange, roleName, roles, useTeam } from "../team.js";
import { useQuery } from "../use-query.js";
import { OrganizationSettings } from "./organization-settings.js";
import { ErrorNote } from "../components/outcome.js";

/**
 * The organization's members and their roles, invitations and its name and SSO join (admins),
 * and ownership transfer and deletion (owners). Each control shows only when the server would allow it
 * (src/teams/permissions.ts).
 */
export function Members() {
  const t = useTeam();
  const organization = t.membership.organization!;
  const myRole = t.membership.role;
  const members = useQuery(async () => (await teams.listMembers({ organizationId: organization.id })).members, [organization.id]);
  const owners = (members.data ?? []).filter((m) => m.role === Role.OWNER).length;
  const changed = async () => {
    members.reload();
    await t.reload();
  };
  return (
    <section class="members">
      <h1>Members of {organization.name}</h1>
      <div class="card" data-section="members">
        <QueryStatus state={members} what="members" />
        {/* Focusable, so a keyboard can scroll it on a narrow screen (it may hold no control). */}
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Members">
          <table>
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Joined (UTC)</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(members.data ?? []).map((m) => (
                <MemberRow
                  key={m.userId}
                  member={m}
                  organizationId={organization.id}
                  myRole={myRole}
                  self={m.userId === t.session.userId}
                  lastOwner={m.role === Role.OWNER && owners === 1}
                  onChanged={changed}
                />
              ))}
            </tbody>
          </table>
        </div>
      </div>
      {can(myRole, "members.invite") && <Invitations organizationId={organization.id} myRole={myRole} />}
      {can(myRole, "organization.settings") && <OrganizationSettings />}
      {can(myRole, "ownership.transfer") && members.data && (
        <TransferOwnership organizationId={organization.id} others={members.data.filter((m) => m.userId !== t.session.userId)} onDone={changed} />
      )}
      {can(myRole, "organization.delete") && (
        <ConfirmDelete
          section="delete-organization"
          summary="Delete this organization…"
          name={organization.name}
          inputName="delete-organization-name"
          what="organization"
          button="Delete organization and all its data"
          onDelete={async () => {
            await teams.deleteOrganization({ organizationId: organization.id });
            await t.reload();
            navigate(base);
          }}
        >
          <p>
            This deletes "{organization.name}" with every project, key and trace in it, for good, and removes every member from it. Its keys stop
            working at once.
          </p>
        </ConfirmDelete>
      )}
    </section>
  );
}

function MemberRow({
  member: m,
  organizationId,
  myRole,
  self,
  lastOwner,
  onChanged,
}: { member: Member; organizationId: string; myRole: Role; self: boolean; lastOwner: boolean; onChanged: () => Promise<void> }) {
  const t = useTeam();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  // Roles this member may be given by me; their own role always shows.
  const choices = self ? [] : roles.filter((r) => r.role === m.role || mayChange(myRole, m.role, r.role));
  const act = async (call: () => Promise<unknown>, after: () => Promise<void>) => {
    setError(undefined);
    try {
      await call();
      await after();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const setRole = (role: Role) => act(() => teams.setMemberRole({ organizationId, userId: m.userId, role }), onChanged);
  const remove = () => act(() => teams.removeMember({ organizationId, userId: m.userId }), onChanged);
  const leave = () =>
    act(
      () => teams.removeMember({ organizationId, userId: m.userId }),
      async () => {
        await t.reload();
        navigate(base);
      },
    );
  const removable = self ? !lastOwner : mayChange(myRole, m.role, undefined);
  return (
    <tr data-member={m.email} data-role={roleName(m.role)}>
      <td>
        {m.email}
        {self && <span class="muted small"> (you)</span>}
      </td>
      <td>
        {choices.length > 1 ? (
          <select aria-label={`Role of ${m.email}`} name="member-role" value={m.role} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)}>
            {choices.map((r) => (
              <option value={r.role}>{r.name}</option>
            ))}
          </select>
        ) : (
          roleName(m.role)
        )}
      </td>
      <td class="nowrap">{dateTime(m.joinedAt).slice(0, 16)}</td>
      <td class="actions">
        {removable &&
          (confirming ? (
            <span class="confirm">
              {self ? "Leave this organization? You lose access to its projects." : `Remove ${m.email}? They lose access at once.`}{" "}
              <button type="button" class="danger" onClick={self ? leave : remove}>
                {self ? "Yes, leave" : "Yes, remove"}
              </button>{" "}
              <button type="button" class="link" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" onClick={() => setConfirming(true)}>
              {self ? "Leave organization…" : "Remove…"}
              {!self && <span class="sr-only"> {m.email}</span>}
            </button>
          ))}
        {self && lastOwner && <span class="muted small">You are its only owner: transfer the ownership to leave.</span>}
        {error && (
          <span class="error" role="alert">
            {error}
          </span>
        )}
      </td>
    </tr>
  );
}

function Invitations({ organizationId, myRole }: { organizationId: string; myRole: Role }) {
  const pending = useQuery(async () => (await teams.listInvitations({ organizationId })).invitations, [organizationId]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState(Role.MEMBER);
  const [created, setCreated] = useState<CreateInvitationResponse>();
  const [error, setError] = useState<string>();
  const choices = roles.filter((r) => mayChange(myRole, undefined, r.role));
  const invite = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      setCreated(await teams.createInvitation({ organizationId, email, role }));
      setEmail("");
      pending.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const revoke = async (invitationId: string) => {
    setError(undefined);
    try {
      await teams.revokeInvitation({ organizationId, invitationId });
      pending.reload();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <div class="card" data-section="invitations">
      <h2>Invitations</h2>
      <form class="row create-key" onSubmit={invite}>
        <label>
          Email
          <input name="invite-email" type="email" class="wide" required maxLength={254} value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Role
          <select name="invite-role" value={role} onChange={(e) => setRole(Number(e.currentTarget.value) as Role)}>
            {choices.map((r) => (
              <option value={r.role}>{r.name}</option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary">
          Invite
        </button>
      </form>
      <ErrorNote error={error} />
      {created && <InvitationLink created={created} onDone={() => setCreated(undefined)} />}
      <h3>Pending</h3>
      <QueryStatus state={pending} what="invitations" />
      {pending.data?.length === 0 && <p class="muted">No pending invitations.</p>}
      {(pending.data?.length ?? 0) > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Invited by</th>
                <th>Expires (UTC)</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {pending.data!.map((i) => (
                <tr data-invitation={i.email}>
                  <td>{i.email}</td>
                  <td>{roleName(i.role)}</td>
                  <td>{i.invitedBy}</td>
                  <td class="nowrap">{dateTime(i.expiresAt).slice(0, 16)}</td>
                  <td class="actions">
                    <button type="button" onClick={() => revoke(i.id)}>
                      Revoke<span class="sr-only"> the invitation of {i.email}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** The invitation's link, shown this once, and whether it was mailed too. */
function InvitationLink({ created, onDone }: { created: CreateInvitationResponse; onDone: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  const to = created.invitation?.email ?? "";
  return (
    <div class="new-key" role="status" data-invitation-link>
      <p>
        <strong>Invitation for {to} created.</strong>{" "}
        {created.mailed ? (
          <span data-mailed>It was sent to {to} by mail; you can also copy the link below.</span>
        ) : (
          <span>Mail is not set up on this server: copy the link and send it to {to} yourself.</span>
        )}{" "}
        It works once, until {dateTime(created.invitation?.expiresAt)} UTC.
      </p>
      <div class="row">
        <input ref={field} name="invitation-url" aria-label="Invitation link" readOnly value={created.url} onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          onClick={async () => {
            await copyText(created.url, field.current);
            setCopied(true);
          }}
        >
          {copied ? "Copied" : "Copy link"}
        </button>
        <button type="button" class="link" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function TransferOwnership({ organizationId, others, onDone }: { organizationId: string; others: Member[]; onDone: () => Promise<void> }) {
  const [userId, setUserId] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  const target = others.find((m) => m.userId === userId);
  const transfer = async () => {
    setError(undefined);
    try {
      await teams.transferOwnership({ organizationId, userId });
      setConfirming(false);
      await onDone();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  if (others.length === 0) return null;
  return (
    <div class="card stack narrow" data-section="transfer">
      <h2>Transfer ownership</h2>
      <label>
        New owner
        <select name="new-owner" value={userId} onChange={(e) => setUserId(e.currentTarget.value)}>
          <option value="">Choose a member…</option>
          {others.map((m) => (
            <option value={m.userId}>{m.email}</option>
          ))}
        </select>
      </label>
      {confirming && target ? (
        <p class="confirm">
          Make {target.email} an owner? You become an admin.{" "}
          <button type="button" class="danger" onClick={transfer}>
            Yes, transfer
          </button>{" "}
          <button type="button" class="link" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </p>
      ) : (
        <button type="button" disabled={!target} onClick={() => setConfirming(true)}>
          Transfer ownership…
        </button>
      )}
      <ErrorNote error={error} />
    </div>
  );
}
