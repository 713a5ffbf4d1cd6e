import { useState } from "preact/hooks";
import { team as teams } from "../api.js";
import { QueryStatus } from "../components/query-status.js";
import { dateTime } from "../format.js";
import { base } from "../router.js";
import { useTeam } from "../team.js";
import { useQuery } from "../use-query.js";

const pageSize = 50;

/** The organization's audit log (admins), newest first, a page at a time, and all of it as a download. */
export function AuditLog() {
  const t = useTeam();
  const organization = t.membership.organization!;
  // The last entry id of each page before the current one: the server pages by it.
  const [stack, setStack] = useState<string[]>([]);
  const before = stack[stack.length - 1] ?? "";
  const entries = useQuery(
    async () => (await teams.listAuditLog({ organizationId: organization.id, limit: pageSize, before })).entries,
    [organization.id, before],
  );
  const projectNames = new Map(t.membership.projects.map((p) => [p.id, p.name]));
  const rows = entries.data ?? [];
  return (
    <section class="audit">
      <div class="row between">
        <h1>Audit log of {organization.name}</h1>
        <a class="button" href={`${base}export/audit.jsonl?organization=${encodeURIComponent(organization.id)}`} download>
          Download JSONL
        </a>
      </div>
      <div class="card">
        <QueryStatus state={entries} what="the audit log" />
        {entries.data?.length === 0 && <p class="muted">{stack.length > 0 ? "No older entries." : "Nothing recorded yet."}</p>}
        {rows.length > 0 && (
          // Focusable, so a keyboard can scroll it on a narrow screen.
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Audit entries">
            <table>
              <thead>
                <tr>
                  <th>When (UTC)</th>
                  <th>Who</th>
                  <th>What</th>
                  <th>Target</th>
                  <th>Project</th>
                  <th>Details</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((e) => (
                  <tr data-audit-id={e.id} data-audit-action={e.action}>
                    <td class="nowrap">{dateTime(e.at)}</td>
                    <td>{e.actor}</td>
                    <td>
                      <code>{e.action}</code>
                    </td>
                    <td class="wrap">{e.target}</td>
                    <td>{e.projectId ? (projectNames.get(e.projectId) ?? e.projectId) : "—"}</td>
                    <td class="small wrap">
                      {Object.entries(e.details)
                        .map(([k, v]) => `${k}: ${v}`)
                        .join(", ")}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <nav class="row pager" aria-label="Audit log pages">
          <button type="button" disabled={stack.length === 0} onClick={() => setStack(stack.slice(0, -1))}>
            ← Newer
          </button>
          <button type="button" disabled={rows.length < pageSize} onClick={() => setStack([...stack, rows[rows.length - 1]!.id])}>
            Older →
          </button>
        </nav>
      </div>
    </section>
  );
}
