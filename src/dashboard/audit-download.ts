import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuditEntrySchema } from "../../gen/calltrace/v1/team_service_pb.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import type { TeamStore } from "../store/team-store.js";
import { authorize, type AccessDeps } from "../teams/access-interceptor.js";
import { auditEntryMessage } from "../teams/audit-trail.js";
import { httpStatusOf, webHeaders } from "./trace-download.js";

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
      );
      if (granted.access.kind !== "organization") throw new ConnectError("organization: required", Code.InvalidArgument);
      organizationId = granted.access.organization.id;
    } catch (error) {
      const code = error instanceof ConnectError ? error.code : Code.InvalidArgument;
      sendJson(res, httpStatusOf(code), { error: error instanceof ConnectError ? error.rawMessage : (error as Error).message });
      return;
    }
    const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
    res.writeHead(200, {
      "content-type": "application/x-ndjson; charset=utf-8",
      "content-disposition": `attachment; filename="calltrace-audit-${stamp}.jsonl"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    let before: string | undefined;
    do {
      const page = await teams.listAudit(organizationId, { limit: pageSize, ...(before ? { before } : {}) });
      for (const entry of page) {
        if (res.destroyed) return;
        if (!res.write(`${toJsonString(AuditEntrySchema, auditEntryMessage(entry))}\n`)) await new Promise((resolve) => res.once("drain", resolve));
      }
      before = page.length === pageSize ? page.at(-1)!.id : undefined;
    } while (before);
    res.end();
  };
}
