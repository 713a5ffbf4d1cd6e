import { createHash, randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { isDeliverableEmail, normalizeEmail } from "../dashboard/email-address.js";
import type { SignedIn } from "../dashboard/sessions.js";
import type { InvitationRecord, OrganizationRecord, Role, TeamStore } from "../store/team-store.js";
import type { Access } from "./access.js";
import { notFound } from "./access.js";

/** Sends an invitation's link by mail (SMTP_URL); absent, the dashboard shows the link to copy. */
export interface InvitationMailer {
  send(invitation: { to: string; organization: string; role: Role; url: string; expiresAt: Date; invitedBy: string }): Promise<void>;
}

/** The link's path: the dashboard's invitation page, which shows what it is for and accepts it. */
export const invitationPath = "/app/invite/";

/** SHA-256 of a token: only this is stored. */
export function invitationTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * Invitations: a single-use link carrying 256 random bits, stored only as their SHA-256, that
 * expires (7 days by default) and can be revoked. Only a user signed in with the invited address
 * may accept it.
 */
export function invitations(deps: { teams: TeamStore; mailer?: InvitationMailer | undefined }) {
  const { teams } = deps;
  return {
    async create(access: Extract<Access, { kind: "organization" }>, rawEmail: string, role: Role, days: number, base: string) {
      const email = normalizeEmail(rawEmail);
      if (!isDeliverableEmail(email)) throw new ConnectError("email: enter an address such as name@example.com", Code.InvalidArgument);
      const token = randomBytes(32).toString("base64url");
      const invitation = await teams.createInvitation({
        organizationId: access.organization.id,
        email,
        role,
        tokenHash: invitationTokenHash(token),
        invitedBy: access.user.userId,
        expiresAt: new Date(Date.now() + days * 86_400_000),
      });
      const url = `${base}${invitationPath}${token}`;
      if (!deps.mailer) return { invitation, url, mailed: false };
      try {
        await deps.mailer.send({ to: email, organization: access.organization.name, role, url, expiresAt: invitation.expiresAt, invitedBy: access.user.email });
      } catch (error) {
        // All or nothing: an invitation whose mail failed is revoked, so no link the admin never
        // saw stays usable, and the admin simply invites again once mail works.
        await teams.revokeInvitation(access.organization.id, invitation.id);
        const reason = error instanceof Error ? error.message : String(error);
        throw new ConnectError(`the invitation mail to ${email} could not be sent (${reason}); nothing was created, try again`, Code.Unavailable);
      }
      return { invitation, url, mailed: true };
    },
    /** A usable invitation with its organization; NOT_FOUND for an unknown, used, revoked or expired token alike. */
    async pending(token: string): Promise<{ invitation: InvitationRecord; organization: OrganizationRecord }> {
      const invitation = await teams.findInvitation(invitationTokenHash(token));
      const usable = invitation && !invitation.acceptedAt && !invitation.revokedAt && invitation.expiresAt.getTime() > Date.now();
      const organization = usable ? await teams.getOrganization(invitation.organizationId) : undefined;
      if (!invitation || !organization) throw notFound("invitation", "(link)");
      return { invitation, organization };
    },
    /** A usable invitation for `email`; PERMISSION_DENIED when it was sent to another address. */
    async pendingFor(token: string, email: string): Promise<{ invitation: InvitationRecord; organization: OrganizationRecord }> {
      const found = await this.pending(token);
      if (found.invitation.email !== email) {
        throw new ConnectError(`this invitation is for ${found.invitation.email}; sign in or sign up with that address to accept it`, Code.PermissionDenied);
      }
      return found;
    },
    /** Joins the user to the inviting organization; PERMISSION_DENIED for a user signed in with another address. */
    async accept(token: string, user: Pick<SignedIn, "userId" | "email">): Promise<{ organization: OrganizationRecord; role: Role }> {
      const { invitation, organization } = await this.pendingFor(token, user.email);
      const outcome = await teams.acceptInvitation(invitationTokenHash(token), user.userId, new Date());
      if (outcome.kind !== "accepted") throw notFound("invitation", "(link)");
      const role = (await teams.getMembership(organization.id, user.userId))?.role ?? invitation.role;
      await teams.appendAudit({
        organizationId: organization.id,
        projectId: "",
        actor: user.email,
        action: "member.join",
        target: user.email,
        details: { role, invitation: invitation.id },
      });
      return { organization, role };
    },
  };
}
