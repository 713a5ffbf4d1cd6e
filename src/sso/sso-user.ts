import { AlreadyMemberError, type Role, type TeamStore } from "../store/team-store.js";
import { EmailTakenError, type UserRecord, type UserStore } from "../store/user-store.js";

export interface SsoUserDeps {
  users: UserStore;
  teams: TeamStore;
  /** The plan of the first project of an organization made for a new user (as sign-up does). */
  signupPlan: string;
}

/** Who the provider vouched for: a verified, normalized email. */
export interface SsoIdentity {
  email: string;
  issuer: string;
  subject: string;
}

/**
 * The user behind a verified SSO identity: found by email, or created without a password (so
 * only SSO signs them in). They join each organization whose join domain is their email's
 * domain, with its join role (never owner); a new user who joins none gets an organization of
 * their own, as sign-up gives. Each of their organizations records the sign-in.
 */
export async function ssoUser(deps: SsoUserDeps, identity: SsoIdentity): Promise<UserRecord> {
  const { users, teams } = deps;
  const found = await users.findUserByEmail(identity.email);
  const { user, created } = found ? { user: found, created: false } : await createSsoUser(users, identity.email);
  const domain = identity.email.slice(identity.email.lastIndexOf("@") + 1);
  let joined = 0;
  for (const organization of await teams.organizationsJoinedBy(domain)) {
    if (await teams.getMembership(organization.id, user.id)) continue;
    const role: Role = organization.joinRole === "owner" ? "admin" : organization.joinRole;
    try {
      await teams.addMember(organization.id, user.id, role);
    } catch (error) {
      if (error instanceof AlreadyMemberError) continue; // joined by a sign-in at the same moment
      throw error;
    }
    joined += 1;
    await teams.appendAudit({
      organizationId: organization.id,
      projectId: "",
      actor: "sso",
      action: "member.join",
      target: user.email,
      details: { role, domain },
    });
  }
  if (created && joined === 0) {
    await teams.createOrganization({ name: user.email, ownerUserId: user.id, project: { name: "Default", plan: deps.signupPlan } });
  }
  for (const { organization } of await teams.organizationsOf(user.id)) {
    await teams.appendAudit({
      organizationId: organization.id,
      projectId: "",
      actor: user.email,
      action: "sso.sign_in",
      target: user.email,
      details: { issuer: identity.issuer, subject: identity.subject },
    });
  }
  return user;
}

async function createSsoUser(users: UserStore, email: string): Promise<{ user: UserRecord; created: boolean }> {
  try {
    return { user: await users.createUser({ email, passwordHash: "" }), created: true };
  } catch (error) {
    // A second sign-in of the same new person raced this one: theirs created the user.
    const raced = error instanceof EmailTakenError ? await users.findUserByEmail(email) : undefined;
    if (raced) return { user: raced, created: false };
    throw error;
  }
}
