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
import { EmailTakenError, type UserStore } from "../store/user-store.js";
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
  sessions: Sessions;
  checkPassword: PasswordCheck;
  signupLimit: ReturnType<typeof createSignupLimit>;
  gate: HashingGate;
  /** Whether anyone may sign up (SIGNUP_OPEN); closed for private installs. */
  signupOpen: boolean;
  /** The plan of accounts created by sign-up. */
  signupPlan: string;
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
  const startSession = async (context: HandlerContext, user: { id: string; accountId: string }) =>
    setCookies(context, await sessions.start(user, deps.isSecure(context), context.requestHeader.get("user-agent")));

  return {
    async signUp(request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      if (!deps.signupOpen) throw new ConnectError("sign-up is closed on this installation", Code.PermissionDenied);
      const email = normalizeEmail(request.email);
      if (!isDeliverableEmail(email)) throw new ConnectError("email: enter an address such as name@example.com", Code.InvalidArgument);
      // Taken before hashing, and kept whatever the outcome: probing for registered emails costs attempts too.
      const wait = await deps.signupLimit.reserve(clientAddress(context));
      if (wait > 0) throw tooManyAttempts("too many sign-ups", wait);
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
        await startSession(context, existing);
        return create(SignUpResponseSchema, { session: { email, accountId: existing.accountId } });
      }
      const passwordHash = await deps.gate
        .run("signup", () => hashPassword(request.password))
        .catch((error: unknown) => {
          if (error instanceof HashingBusyError) throw tooManyAttempts(error.message, 60);
          throw error;
        });
      const created = await users
        .createUserWithAccount({ email, passwordHash, accountName: email, plan: deps.signupPlan })
        .catch((error: unknown) => {
          if (error instanceof EmailTakenError) throw emailTaken();
          throw error;
        });
      await startSession(context, created.user);
      return create(SignUpResponseSchema, { session: { email, accountId: created.account.id } });
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
      return create(LogInResponseSchema, { session: { email, accountId: user.accountId } });
    },

    async logOut(_request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      const session = await sessions.authenticate(context.requestHeader, true);
      setCookies(context, await sessions.end(session, deps.isSecure(context)));
      return create(LogOutResponseSchema);
    },

    async getSession(_request, context) {
      const session = await sessions.find(context.requestHeader);
      return create(GetSessionResponseSchema, {
        signupOpen: deps.signupOpen,
        ...(session ? { session: create(SessionSchema, { email: session.email, accountId: session.accountId }) } : {}),
      });
    },
  };
}
