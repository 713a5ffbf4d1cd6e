import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AuditEntrySchema } from "../../gen/calltrace/v1/team_service_pb.js";
import type { Access } from "./access.js";
import type { AuditEntry, TeamStore } from "../store/team-store.js";

/**
 * Records what a caller did in its organization's audit log (docs/teams.md lists the actions):
 * the actor is the signed-in user's email, or `cli` when a command did it.
 */
export function auditTrail(teams: TeamStore) {
  return async (
    access: Extract<Access, { kind: "project" | "organization" }>,
    action: string,
    target: string,
    details: Record<string, string> = {},
  ): Promise<void> => {
    const organizationId = access.kind === "project" ? access.project.organizationId : access.organization.id;
    await teams.appendAudit({
      organizationId,
      projectId: access.kind === "project" ? access.project.id : "",
      actor: access.user?.email ?? "cli",
      action,
      target,
      details,
    });
  };
}

export type AuditTrail = ReturnType<typeof auditTrail>;

/** An audit entry as ListAuditLog answers it and the download writes it. */
export function auditEntryMessage(e: AuditEntry) {
  return create(AuditEntrySchema, {
    id: e.id,
    projectId: e.projectId,
    actor: e.actor,
    action: e.action,
    target: e.target,
    details: e.details,
    at: timestampFromDate(e.at),
  });
}
