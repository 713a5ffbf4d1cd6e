import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AlertService } from "../../gen/calltrace/v1/alert_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { PriceService } from "../../gen/calltrace/v1/price_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import { TeamService } from "../../gen/calltrace/v1/team_service_pb.js";
import { currentProjectId } from "./router.js";

/** Echoes the session's CSRF token (a readable cookie set at log-in) in the header the server checks. */
const csrf: Interceptor = (next) => (req) => {
  const token = document.cookie
    .split(";")
    .map((c) => c.trim())
    .find((c) => c.startsWith("ct_csrf="))
    ?.slice("ct_csrf=".length);
  if (token) req.header.set("x-csrf-token", decodeCookie(token));
  return next(req);
};

/** A malformed cookie value is sent as it is (the server refuses it) rather than breaking every call. */
function decodeCookie(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Calls that find the session gone send the user back to the log-in page. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}
const signedOut: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.Unauthenticated && req.service.typeName !== AuthService.typeName) onSignedOut();
    throw error;
  }
};

/**
 * Every request with a `project_id` left empty reads or changes the project of the current URL
 * (/app/p/<id>/...), so no page has to pass it and none can forget it.
 */
const project: Interceptor = (next) => (req) => {
  if (!req.stream && "projectId" in req.method.input.field) {
    const message = req.message as { projectId?: string };
    if (message.projectId === "") message.projectId = currentProjectId();
  }
  return next(req);
};

const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [signedOut, csrf, project] });

export const auth = createClient(AuthService, transport);
export const account = createClient(AccountService, transport);
export const query = createClient(QueryService, transport);
export const team = createClient(TeamService, transport);
export const alerts = createClient(AlertService, transport);
export const prices = createClient(PriceService, transport);

/** A readable message for an error from any call. */
export function messageOf(error: unknown): string {
  return error instanceof ConnectError ? error.rawMessage : error instanceof Error ? error.message : String(error);
}
