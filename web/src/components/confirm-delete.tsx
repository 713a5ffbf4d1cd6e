import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { messageOf } from "../api.js";
import { ErrorNote } from "./outcome.js";

/**
 * A deletion that cannot be undone, behind a closed "danger zone": the person types the thing's
 * name before the button works. Serves the project's and the organization's deletion alike.
 */
export function ConfirmDelete(props: {
  section: string;
  summary: string;
  children: ComponentChildren;
  /** The name to type, and the input's form name. */
  name: string;
  inputName: string;
  what: string;
  button: string;
  onDelete: () => Promise<void>;
}) {
  const [typed, setTyped] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      await props.onDelete();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <details class="card danger-zone" data-section={props.section}>
      <summary>{props.summary}</summary>
      <form class="stack narrow" onSubmit={submit}>
        {props.children}
        <label>
          Type the {props.what}'s name to confirm
          <input name={props.inputName} required value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        </label>
        <button type="submit" class="danger" disabled={typed !== props.name}>
          {props.button}
        </button>
        <ErrorNote error={error} />
      </form>
    </details>
  );
}
