import { useState } from "preact/hooks";
import { messageOf, team as teams } from "../api.js";
import { ConfirmDelete } from "../components/confirm-delete.js";
import { base, navigate } from "../router.js";
import { can, useTeam } from "../team.js";
import { ProjectPrices } from "./project-prices.js";
import { Outcome } from "../components/outcome.js";

/** Every IANA zone the browser knows, offered as the time zone's suggestions. */
const timeZones = Intl.supportedValuesOf("timeZone");

/** The project's name, retention and time zone (admins change them) and its deletion (owners). */
export function ProjectSettings() {
  const t = useTeam();
  const { project } = t;
  const editable = can(t.membership.role, "project.settings");
  const [name, setName] = useState(project.name);
  const [retention, setRetention] = useState(String(project.retentionDays));
  const [timeZone, setTimeZone] = useState(project.timeZone);
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await teams.updateProject({ projectId: project.id, name, retentionDays: Number(retention), timeZone });
      await t.reload();
      setResult({ ok: true, text: "Saved." });
    } catch (e) {
      setResult({ ok: false, text: messageOf(e) });
    }
  };
  return (
    <>
      <form class="card stack narrow" data-section="project" onSubmit={save}>
        <h2>Project</h2>
        <label>
          Name
          <input name="project-name" required maxLength={100} readOnly={!editable} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Keep traces for (days; 0 keeps them as long as the server's RETENTION_DAYS)
          <input
            name="retention-days"
            type="number"
            min={0}
            max={36500}
            required
            readOnly={!editable}
            value={retention}
            onInput={(e) => setRetention(e.currentTarget.value)}
          />
        </label>
        <label>
          Time zone (empty is UTC)
          <input
            name="time-zone"
            list="time-zones"
            maxLength={64}
            placeholder="UTC"
            readOnly={!editable}
            value={timeZone}
            onInput={(e) => setTimeZone(e.currentTarget.value)}
          />
          <datalist id="time-zones">
            {timeZones.map((z) => (
              <option value={z} />
            ))}
          </datalist>
        </label>
        {editable ? (
          <button type="submit" class="primary">
            Save project
          </button>
        ) : (
          <p class="muted small">Admins and owners change these.</p>
        )}
        <Outcome result={result} />
      </form>
      <ProjectPrices />
      {can(t.membership.role, "project.delete") && <DeleteProject />}
    </>
  );
}

function DeleteProject() {
  const t = useTeam();
  return (
    <ConfirmDelete
      section="delete-project"
      summary="Delete this project…"
      name={t.project.name}
      inputName="delete-project-name"
      what="project"
      button="Delete project and its data"
      onDelete={async () => {
        await teams.deleteProject({ projectId: t.project.id });
        await t.reload();
        navigate(base);
      }}
    >
      <p>This deletes the project "{t.project.name}" with its keys and every trace sent with them, for good. Its keys stop working at once.</p>
    </ConfirmDelete>
  );
}
