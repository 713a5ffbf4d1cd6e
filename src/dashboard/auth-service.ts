import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type AuthService,
  GetSessionResponseSchema,
  LogInResponseSchema,
  LogOutResponseSchema,
  SessionSchema,
  SignUpResponseSchema,
} from "../../gen/calltrace/v1/auth_service_pb.js";
import { clientAddressKey } from "../ingest/trace-service.js";
import type { TeamStore } from "../store/team-store.js";
import { invitations } from "../teams/invitations.js";
import { EmailTakenError, type UserRecord, type UserStore } from "../store/user-store.js";
import { isDeliverableEmail, normalizeEmail } from "./email-address.js";
import { HashingBusyError, type HashingGate } from "./hashing-gate.js";
import type { PasswordCheck } from "./password-check.js";
import { hashPassword } from "./password-hash.js";
import { setCookies } from "./response-cookies.js";
import { assertSameOrigin } from "./same-origin.js";
import type { Sessions } from "./sessions.js";
import type { createSignupLimit } from "./signup-limit.js";
import { tooManyAttempts } from "./too-many-attempts.js";

export interface AuthServiceDeps {
  users: UserStore;
  teams: TeamStore;
  sessions: Sessions;
  checkPassword: PasswordCheck;
  signupLimit: ReturnType<typeof createSignupLimit>;
  gate: HashingGate;
  /** Whether anyone may sign up (SIGNUP_OPEN); closed for private installs. */
  signupOpen: boolean;
  /** The plan of the first project of an organization made by sign-up. */
  signupPlan: string;
  /** Whether single sign-on is configured: the log-in page then offers /auth/oidc/start. */
  ssoEnabled: boolean;
  /** Whether the browser reached us over TLS, so cookies get the Secure flag. */
  isSecure: (context: HandlerContext) => boolean;
}

const emailTaken = () => new ConnectError("an account with this email exists already: log in instead", Code.AlreadyExists);
const wrongCredentials = () => new ConnectError("wrong email or password", Code.Unauthenticated);

/** The client's address as the limits count it (X-Forwarded-For only behind TRUST_PROXY). */
export function clientAddress(context: HandlerContext): string {
  return context.values.get(clientAddressKey) ?? "unknown";
}

/** AuthService: sign-up, log-in and log-out with cookie sessions. */
export function authService(deps: AuthServiceDeps): ServiceImpl<typeof AuthService> {
  const { users, sessions } = deps;
  const invites = invitations({ teams: deps.teams });
  const startSession = async (context: HandlerContext, user: { id: string }) =>
    setCookies(context, await sessions.start(user, deps.isSecure(context), context.requestHeader.get("user-agent")));
  /** What the dashboard needs to know of a signed-in user: who, and the project it opens first. */
  const sessionOf = async (user: Pick<UserRecord, "id" | "email" | "passwordHash">) => {
    const [first] = await deps.teams.organizationsOf(user.id);
    const [project] = first ? await deps.teams.listProjects(first.organization.id) : [];
    return create(SessionSchema, { email: user.email, userId: user.id, accountId: project?.id ?? "", hasPassword: user.passwordHash !== "" });
  };

  return {
    async signUp(request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      const token = request.invitationToken;
      // An invitation is how a private installation (sign-up closed) lets someone in.
      if (!deps.signupOpen && token === "") throw new ConnectError("sign-up is closed on this installation", Code.PermissionDenied);
      const email = normalizeEmail(request.email);
      if (!isDeliverableEmail(email)) throw new ConnectError("email: enter an address such as name@example.com", Code.InvalidArgument);
      // Taken before hashing, and kept whatever the outcome: probing for registered emails (or
      // guessing invitation tokens) costs attempts too.
      const wait = await deps.signupLimit.reserve(clientAddress(context));
      if (wait > 0) throw tooManyAttempts("too many sign-ups", wait);
      // Checked before any user is made: a used, expired or revoked link, or one for another address, makes nothing.
      if (token !== "") await invites.pendingFor(token, email);
      // A retry of a sign-up whose answer was lost (the page was left mid-hash) finds the account
      // made: the same password logs in, through the log-in limits, like LogIn would.
      const existing = await users.findUserByEmail(email);
      if (existing) {
        const ok = await deps.checkPassword({
          email,
          address: clientAddress(context),
          password: request.password,
          storedHash: existing.passwordHash,
        });
        if (!ok) throw emailTaken();
        if (token !== "") await invites.accept(token, { userId: existing.id, email });
        await startSession(context, existing);
        return create(SignUpResponseSchema, { session: await sessionOf(existing) });
      }
      const passwordHash = await deps.gate
        .run("signup", () => hashPassword(request.password))
        .catch((error: unknown) => {
          if (error instanceof HashingBusyError) throw tooManyAttempts(error.message, 60);
          throw error;
        });
      const user = await users.createUser({ email, passwordHash }).catch((error: unknown) => {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      });
      // An invited user joins the inviting organization instead of getting one of their own. Should
      // the link be used up between the check above and here, the user exists without an
      // organization: a retry logs them in, and the next invitation gives them one.
      if (token !== "") await invites.accept(token, { userId: user.id, email });
      else await deps.teams.createOrganization({ name: email, ownerUserId: user.id, project: { name: "Default", plan: deps.signupPlan } });
      await startSession(context, user);
      return create(SignUpResponseSchema, { session: await sessionOf(user) });
    },

    async logIn(request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      const email = normalizeEmail(request.email);
      const user = await users.findUserByEmail(email);
      const ok = await deps.checkPassword({
        email,
        address: clientAddress(context),
        password: request.password,
        storedHash: user?.passwordHash,
      });
      if (!user || !ok) throw wrongCredentials();
      await startSession(context, user);
      return create(LogInResponseSchema, { session: await sessionOf(user) });
    },

    async logOut(_request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      const session = await sessions.authenticate(context.requestHeader, true);
      setCookies(context, await sessions.end(session, deps.isSecure(context)));
      return create(LogOutResponseSchema);
    },

    async getSession(_request, context) {
      const signedIn = await sessions.find(context.requestHeader);
      const user = signedIn && (await users.getUser(signedIn.userId));
      return create(GetSessionResponseSchema, {
        signupOpen: deps.signupOpen,
        ssoEnabled: deps.ssoEnabled,
        ...(user ? { session: await sessionOf(user) } : {}),
      });
    },
  };
}
