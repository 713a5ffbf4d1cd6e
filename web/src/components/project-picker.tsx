import { useState } from "preact/hooks";
import { messageOf, team as teams } from "../api.js";
import { navigate, projectBase, useLocation } from "../router.js";
import type { OrganizationMembership } from "../../../gen/calltrace/v1/team_service_pb.js";
import { can, type Team } from "../team.js";
import { ErrorNote } from "./outcome.js";

/**
 * The header's organization and project picker: switching keeps the page (traces stay traces) but
 * drops its query, whose filters and trace ids belong to the other project. "New…" makes a project
 * in the current organization (admins) or a new organization.
 */
export function ProjectPicker({ team }: { team: Team }) {
  const { path } = useLocation();
  const open = (projectId: string) => navigate(projectBase(projectId) + path.slice(1));
  return (
    <span class="row project-picker">
      <label>
        <span class="sr-only">Organization and project</span>
        <select name="project" value={team.project.id} onChange={(e) => open(e.currentTarget.value)}>
          {team.memberships.map((m) => (
            <optgroup label={m.organization?.name ?? ""}>
              {m.projects.map((p) => (
                <option value={p.id}>
                  {m.organization?.name} / {p.name}
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </label>
      <NewMenu membership={team.membership} reload={team.reload} onCreated={open} />
    </span>
  );
}

/** Creates a project in `membership`'s organization (when its role allows) or a new organization. */
export function NewMenu({
  membership,
  reload,
  onCreated,
}: { membership: OrganizationMembership | undefined; reload: () => Promise<unknown>; onCreated: (projectId: string) => void }) {
  const inOrganization = membership !== undefined && can(membership.role, "project.settings");
  const [kind, setKind] = useState<"project" | "organization">(inOrganization ? "project" : "organization");
  const [name, setName] = useState("");
  const [error, setError] = useState<string>();
  const [opened, setOpened] = useState(false);
  const organizationName = membership?.organization?.name ?? "";
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const projectId =
        kind === "project" && membership
          ? (await teams.createProject({ organizationId: membership.organization!.id, name })).project!.id
          : (await teams.createOrganization({ name })).project!.id;
      await reload();
      setName("");
      setOpened(false);
      onCreated(projectId);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <details class="new-menu" open={opened} onToggle={(e) => setOpened(e.currentTarget.open)}>
      <summary>New…</summary>
      <form class="card stack" onSubmit={submit}>
        <fieldset class="row">
          <legend class="sr-only">Create</legend>
          {inOrganization && (
            <label class="inline">
              <input type="radio" name="new-kind" checked={kind === "project"} onChange={() => setKind("project")} /> Project in {organizationName}
            </label>
          )}
          <label class="inline">
            <input type="radio" name="new-kind" checked={kind === "organization"} onChange={() => setKind("organization")} /> Organization
          </label>
        </fieldset>
        <label>
          {kind === "project" ? "Project name" : "Organization name"}
          <input name="new-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        {kind === "organization" && <p class="muted small">You will own it; it starts with one project, "Default".</p>}
        <button type="submit" class="primary">
          {kind === "project" ? "Create project" : "Create organization"}
        </button>
        <ErrorNote error={error} />
      </form>
    </details>
  );
}
