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
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { clientAddressKey } from "../ingest/trace-service.js";
import { EmailTakenError, type UserStore } from "../store/user-store.js";
import type { LoginThrottle } from "./login-throttle.js";
import { decoyPasswordHash, hashPassword, verifyPassword } from "./password-hash.js";
import { assertSameOrigin } from "./same-origin.js";
import type { Sessions } from "./sessions.js";

export interface AuthServiceDeps {
  users: UserStore;
  sessions: Sessions;
  throttle: LoginThrottle;
  /** Whether anyone may sign up (SIGNUP_OPEN); closed for private installs. */
  signupOpen: boolean;
  /** The plan of accounts created by sign-up. */
  signupPlan: string;
  /** Whether the browser reached us over TLS, so cookies get the Secure flag. */
  isSecure: (context: HandlerContext) => boolean;
}

const wrongCredentials = () => new ConnectError("wrong email or password", Code.Unauthenticated);

/** AuthService: sign-up, log-in and log-out with cookie sessions. */
export function authService(deps: AuthServiceDeps): ServiceImpl<typeof AuthService> {
  const { users, sessions, throttle } = deps;
  const setCookies = (context: HandlerContext, cookies: string[]) => {
    for (const cookie of cookies) context.responseHeader.append("set-cookie", cookie);
  };

  return {
    async signUp(request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      if (!deps.signupOpen) throw new ConnectError("sign-up is closed on this installation", Code.PermissionDenied);
      const email = normalizeEmail(request.email);
      const passwordHash = await hashPassword(request.password);
      const created = await users
        .createUserWithAccount({ email, passwordHash, accountName: email, plan: deps.signupPlan })
        .catch((error: unknown) => {
          if (error instanceof EmailTakenError) throw new ConnectError("an account with this email exists already", Code.AlreadyExists);
          throw error;
        });
      setCookies(context, await sessions.start(created.user, deps.isSecure(context)));
      return create(SignUpResponseSchema, { session: { email, accountId: created.account.id } });
    },

    async logIn(request, context) {
      assertSameOrigin(context.requestHeader, context.url);
      const email = normalizeEmail(request.email);
      const address = context.values.get(clientAddressKey) ?? "unknown";
      const wait = await throttle.blockedFor(email, address);
      if (wait > 0) throw tooManyAttempts(wait);
      const user = await users.findUserByEmail(email);
      // An unknown email costs the same scrypt run as a wrong password.
      const ok = await verifyPassword(request.password, user?.passwordHash ?? (await decoyPasswordHash()));
      if (!user || !ok) {
        await throttle.failed(email, address);
        throw wrongCredentials();
      }
      await throttle.succeeded(email, address);
      setCookies(context, await sessions.start(user, deps.isSecure(context)));
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

/** Emails compare case-insensitively. */
function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function tooManyAttempts(wait: number): ConnectError {
  const retry = create(RetryInfoSchema, { retryDelay: { seconds: BigInt(wait) } });
  return new ConnectError(`too many failed log-ins; try again in ${wait} s`, Code.ResourceExhausted, { "retry-after": String(wait) }, [
    { desc: RetryInfoSchema, value: retry },
  ]);
}
