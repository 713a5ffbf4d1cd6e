import { useState } from "preact/hooks";
import type { AlertEvent } from "../../../gen/calltrace/v1/alert_pb.js";
import { type AlertDelivery, type AlertDestination, AlertDeliveryState } from "../../../gen/calltrace/v1/alert_service_pb.js";
import { headline, windowText } from "../../../src/alerts/alert-text.js";
import { alerts, messageOf } from "../api.js";
import { dateTime } from "../format.js";
import { Outcome } from "../components/outcome.js";

/** The firing history, newest first: what crossed what, its window, and a link to the view it is about. */
export function AlertHistory({ events }: { events: AlertEvent[] }) {
  return (
    <div class="card" data-section="alert-history">
      <h2>History</h2>
      {events.length === 0 ? (
        <p class="muted">Nothing has fired yet.</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="History">
          <table>
            <thead>
              <tr>
                <th>Fired (UTC)</th>
                <th>What</th>
                <th>Window</th>
                <th>
                  <span class="sr-only">Link</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr data-event={e.id} data-resolved={e.resolved ? "true" : undefined}>
                  <td>{dateTime(e.firedAt)}</td>
                  <td class="wrap">{headline(e)}</td>
                  <td>{windowText(e)}</td>
                  <td>{e.dashboardUrl && <a href={e.dashboardUrl}>View calls</a>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

const stateNames: Record<number, string> = {
  [AlertDeliveryState.PENDING]: "Pending",
  [AlertDeliveryState.DELIVERED]: "Delivered",
  [AlertDeliveryState.FAILED]: "Failed",
};

/** Every delivery with every attempt (time, outcome, response code); admins send any of them again. */
export function DeliveryLog(props: { deliveries: AlertDelivery[]; destinations: AlertDestination[]; manage: boolean; onChanged: () => void }) {
  const [result, setResult] = useState<{ ok: boolean; text: string }>();
  const destinationName = (id: string) => props.destinations.find((d) => d.id === id)?.name ?? "(deleted)";
  const resend = async (delivery: AlertDelivery) => {
    setResult(undefined);
    try {
      await alerts.resendDelivery({ projectId: "", deliveryId: delivery.id });
      setResult({ ok: true, text: "Sent again, under the same webhook-id." });
      props.onChanged();
    } catch (e) {
      setResult({ ok: false, text: messageOf(e) });
    }
  };
  return (
    <div class="card" data-section="delivery-log">
      <h2>Delivery log</h2>
      {props.deliveries.length === 0 ? (
        <p class="muted">No deliveries yet.</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Delivery log">
          <table>
            <thead>
              <tr>
                <th>Created (UTC)</th>
                <th>Destination</th>
                <th>Event id</th>
                <th>State</th>
                <th>Attempts</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.deliveries.map((d) => (
                <tr data-delivery={d.id} data-state={stateNames[d.state]?.toLowerCase()}>
                  <td>{dateTime(d.createdAt)}</td>
                  <td>{destinationName(d.destinationId)}</td>
                  <td>
                    <code>{d.eventId}</code>
                  </td>
                  <td>
                    {stateNames[d.state]}
                    {d.state === AlertDeliveryState.PENDING && d.nextAttemptAt && <span class="muted small"> next {dateTime(d.nextAttemptAt)}</span>}
                  </td>
                  <td>
                    <ol class="attempts">
                      {d.attempts.map((a) => (
                        <li data-code={a.responseCode}>
                          {dateTime(a.at)}: {a.outcome}
                          {a.responseCode ? ` ${a.responseCode}` : ""} in {a.durationMs} ms{a.trigger === "resend" ? " (sent by hand)" : ""}
                          {a.detail && <span class="muted small"> {a.detail}</span>}
                        </li>
                      ))}
                    </ol>
                  </td>
                  <td>
                    {props.manage && (
                      <button type="button" onClick={() => resend(d)}>
                        Resend<span class="sr-only"> delivery {d.id}</span>
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Outcome result={result} />
    </div>
  );
}
