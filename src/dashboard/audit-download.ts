import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuditEntrySchema } from "../../gen/calltrace/v1/team_service_pb.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { TeamStore } from "../store/team-store.js";
import { authorize, requestAddress, type AccessDeps } from "../teams/access-interceptor.js";
import { auditEntryMessage } from "../teams/audit-trail.js";
import { refuseDownload, sendDownload } from "./download-response.js";
import { webHeaders } from "./trace-download.js";

/** Entries read per page while streaming. */
const pageSize = 500;

/**
 * `GET /app/export/audit.jsonl?organization=<id>`: the organization's whole audit log, newest
 * first, one AuditEntry per line as ListAuditLog answers it in JSON, streamed page by page. For
 * a session whose role may read the log (audit.read, admins and owners); like the trace download,
 * a GET without side effects behind a SameSite=Strict cookie, so it needs no CSRF token.
 */
export function auditDownload(teams: TeamStore, access: AccessDeps) {
  return async (req: NodeRequest, res: NodeResponse, url: URL): Promise<void> => {
    let organizationId: string;
    try {
      const granted = await authorize(
        access,
        { kind: "organization", permission: "audit.read" },
        webHeaders(req),
        url.href,
        { organizationId: url.searchParams.get("organization") ?? "" },
        false,
        requestAddress(access, req),
      );
      if (granted.access.kind !== "organization") throw new ConnectError("organization: required", Code.InvalidArgument);
      organizationId = granted.access.organization.id;
    } catch (error) {
      refuseDownload(res, error);
      return;
    }
    await sendDownload(res, { name: "audit", extension: "jsonl", contentType: "application/x-ndjson; charset=utf-8" }, auditLines(teams, organizationId));
  };
}

/** The organization's audit log, newest first, as JSON lines, read page by page. */
async function* auditLines(teams: TeamStore, organizationId: string): AsyncGenerator<string> {
  let before: string | undefined;
  do {
    const page = await teams.listAudit(organizationId, { limit: pageSize, ...(before ? { before } : {}) });
    for (const entry of page) yield `${toJsonString(AuditEntrySchema, auditEntryMessage(entry))}\n`;
    before = page.length === pageSize ? page.at(-1)!.id : undefined;
  } while (before);
}
