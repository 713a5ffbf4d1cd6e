import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { SignedIn } from "../dashboard/sessions.js";
import type { ApiKeyRecord } from "../store/records.js";
import type { OrganizationRecord, ProjectRecord, Role } from "../store/team-store.js";

/** Who is calling, and what of theirs the call reaches; set by the access interceptor, read by handlers. */
export type Access =
  | { kind: "user"; user: SignedIn }
  | { kind: "organization"; user: SignedIn; organization: OrganizationRecord; role: Role }
  | { kind: "project"; user: SignedIn | undefined; project: ProjectRecord; role: Role; key: ApiKeyRecord | undefined };

export const accessKey = createContextKey<Access | undefined>(undefined, { description: "caller's access" });

/** The access the interceptor granted; a service reached without it fails closed. */
function accessOf(context: HandlerContext): Access {
  const access = context.values.get(accessKey);
  if (!access) throw new ConnectError("not signed in", Code.Unauthenticated);
  return access;
}

export function userAccess(context: HandlerContext): SignedIn {
  const access = accessOf(context);
  if (!access.user) throw new ConnectError("this call needs a dashboard session", Code.Unauthenticated);
  return access.user;
}

export function projectAccess(context: HandlerContext): Extract<Access, { kind: "project" }> {
  const access = accessOf(context);
  if (access.kind !== "project") throw new ConnectError("this call names no project", Code.Internal);
  return access;
}

export function organizationAccess(context: HandlerContext): Extract<Access, { kind: "organization" }> {
  const access = accessOf(context);
  if (access.kind !== "organization") throw new ConnectError("this call names no organization", Code.Internal);
  return access;
}

/** The same answer for an id that does not exist and one the caller may not see. */
export function notFound(what: string, id: string): ConnectError {
  return new ConnectError(`no ${what} with id ${JSON.stringify(id)}`, Code.NotFound);
}
