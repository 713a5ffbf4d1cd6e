import { useState } from "preact/hooks";
import { Role } from "../../../gen/calltrace/v1/team_service_pb.js";
import { messageOf, team as teams } from "../api.js";
import { roles, useTeam } from "../team.js";
import { Outcome } from "../components/outcome.js";

/**
 * The organization's name and its single sign-on join: people who sign in with SSO from this
 * email domain join with this role (never owner). Admins change them; the page shows it to them only.
 */
export function OrganizationSettings() {
  const t = useTeam();
  const organization = t.membership.organization!;
  const [name, setName] = useState(organization.name);
  const [joinDomain, setJoinDomain] = useState(organization.joinDomain);
  const [joinRole, setJoinRole] = useState<Role>(organization.joinRole === Role.UNSPECIFIED ? Role.VIEWER : organization.joinRole);
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await teams.updateOrganization({ organizationId: organization.id, name, joinDomain: joinDomain.trim().toLowerCase(), joinRole });
      await t.reload();
      setResult({ ok: true, text: "Saved." });
    } catch (e) {
      setResult({ ok: false, text: messageOf(e) });
    }
  };
  return (
    <form class="card stack narrow" data-section="organization" onSubmit={save}>
      <h2>Organization</h2>
      <label>
        Name
        <input name="organization-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Single sign-on joins people from this email domain (empty: nobody)
        <input name="join-domain" maxLength={253} placeholder="example.com" value={joinDomain} onInput={(e) => setJoinDomain(e.currentTarget.value)} />
      </label>
      <label>
        as
        <select name="join-role" value={joinRole} onChange={(e) => setJoinRole(Number(e.currentTarget.value) as Role)}>
          {roles
            .filter((r) => r.role !== Role.OWNER)
            .map((r) => (
              <option value={r.role}>{r.name}</option>
            ))}
        </select>
      </label>
      <button type="submit" class="primary">
        Save organization
      </button>
      <Outcome result={result} />
    </form>
  );
}
