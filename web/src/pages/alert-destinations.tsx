import { useState } from "preact/hooks";
import { type AlertDestination, AlertDestinationKind } from "../../../gen/calltrace/v1/alert_service_pb.js";
import { alerts, messageOf } from "../api.js";
import { ShownOnce } from "../components/shown-once.js";
import { dateTime } from "../format.js";
import { ErrorNote, Outcome } from "../components/outcome.js";

const kindNames: Record<number, string> = {
  [AlertDestinationKind.WEBHOOK]: "Webhook",
  [AlertDestinationKind.SLACK]: "Slack",
  [AlertDestinationKind.EMAIL]: "Email",
};

/** Where a destination sends: its URL, or its addresses. */
const target = (d: AlertDestination) => (d.kind === AlertDestinationKind.EMAIL ? d.emails.join(", ") : d.url);

function status(d: AlertDestination): string {
  if (d.disabledAt) return `Disabled ${dateTime(d.disabledAt)}`;
  if (d.failingSince) return `Failing since ${dateTime(d.failingSince)}`;
  return "Working";
}

/**
 * The project's destinations: webhooks (signed, their secret shown once), Slack and email. Admins
 * add, test, rotate, re-enable and delete them; everyone else sees the list.
 */
export function AlertDestinations(props: { destinations: AlertDestination[]; manage: boolean; onChanged: () => void }) {
  const [secret, setSecret] = useState<{ name: string; secret: string }>();
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  const act = async (call: () => Promise<unknown>, done: string) => {
    setResult(undefined);
    try {
      await call();
      setResult({ ok: true, text: done });
      props.onChanged();
    } catch (e) {
      setResult({ ok: false, text: messageOf(e) });
    }
  };
  return (
    <div class="card" data-section="destinations">
      <h2>Destinations</h2>
      {secret && (
        <ShownOnce inputId="webhook-secret" secret={secret.secret} onDone={() => setSecret(undefined)} hint="Give it to the receiver that verifies the webhook-signature header (docs/alerts.md).">
          <strong>Signing secret of "{secret.name}".</strong>
        </ShownOnce>
      )}
      {props.destinations.length === 0 ? (
        <p class="muted">No destinations yet.</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Destinations">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Sends to</th>
                <th>Status</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.destinations.map((d) => (
                <tr data-destination={d.name} data-disabled={d.disabledAt ? "true" : undefined}>
                  <td>{d.name}</td>
                  <td>{kindNames[d.kind]}</td>
                  <td class="wrap">{target(d)}</td>
                  <td>
                    {status(d)}
                    {d.disabledReason && <span class="muted small"> ({d.disabledReason})</span>}
                  </td>
                  <td class="actions">
                    {props.manage && (
                      <>
                        <button type="button" onClick={() => act(() => alerts.sendTestEvent({ projectId: "", destinationId: d.id }), `Test event sent to ${d.name}.`)}>
                          Send test event<span class="sr-only"> to {d.name}</span>
                        </button>
                        {d.kind === AlertDestinationKind.WEBHOOK && (
                          <button
                            type="button"
                            onClick={() =>
                              act(async () => {
                                const rotated = await alerts.rotateDestinationSecret({ projectId: "", destinationId: d.id });
                                setSecret({ name: d.name, secret: rotated.secret });
                              }, `New secret for ${d.name}; the old one signs beside it for a day.`)
                            }
                          >
                            Rotate secret<span class="sr-only"> of {d.name}</span>
                          </button>
                        )}
                        {d.disabledAt && (
                          <button type="button" onClick={() => act(() => alerts.enableDestination({ projectId: "", destinationId: d.id }), `${d.name} enabled.`)}>
                            Enable<span class="sr-only"> {d.name}</span>
                          </button>
                        )}
                        <button type="button" class="danger" onClick={() => act(() => alerts.deleteDestination({ projectId: "", destinationId: d.id }), `${d.name} deleted.`)}>
                          Delete<span class="sr-only"> {d.name}</span>
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome result={result} />
      {props.manage && (
        <NewDestination
          onCreated={(name, created) => {
            // Only a webhook has a secret to show.
            if (created) setSecret({ name, secret: created });
            props.onChanged();
          }}
        />
      )}
    </div>
  );
}

function NewDestination({ onCreated }: { onCreated: (name: string, secret: string) => void }) {
  const [kind, setKind] = useState<AlertDestinationKind>(AlertDestinationKind.WEBHOOK);
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [emails, setEmails] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const created = await alerts.createDestination({
        projectId: "",
        kind,
        name,
        url: kind === AlertDestinationKind.EMAIL ? "" : url,
        emails: kind === AlertDestinationKind.EMAIL ? emails.split(/[\s,]+/).filter(Boolean) : [],
      });
      setName("");
      setUrl("");
      setEmails("");
      onCreated(created.destination?.name ?? name, created.secret);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <form class="stack narrow" data-section="new-destination" onSubmit={submit}>
      <h3>Add a destination</h3>
      <label>
        Kind
        <select name="destination-kind" value={kind} onChange={(e) => setKind(Number(e.currentTarget.value) as AlertDestinationKind)}>
          {Object.entries(kindNames).map(([k, label]) => (
            <option value={k}>{label}</option>
          ))}
        </select>
      </label>
      <label>
        Name
        <input name="destination-name" maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      {kind === AlertDestinationKind.EMAIL ? (
        <label>
          Addresses (comma-separated, up to 20)
          <input name="destination-emails" required value={emails} onInput={(e) => setEmails(e.currentTarget.value)} />
        </label>
      ) : (
        <label>
          {kind === AlertDestinationKind.SLACK ? "Slack incoming-webhook URL" : "URL"}
          <input name="destination-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </label>
      )}
      <button type="submit">Add destination</button>
      <ErrorNote error={error} />
    </form>
  );
}
