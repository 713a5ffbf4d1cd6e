import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { copyText } from "./copy-text.js";

/**
 * A secret the server shows once (an API key, a webhook's signing secret): in a field to copy,
 * with a Copy button, until the person says they are done.
 */
export function ShownOnce(props: { inputId: string; secret: string; children: ComponentChildren; hint: ComponentChildren; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await copyText(props.secret, document.getElementById(props.inputId) as HTMLInputElement | null);
    setCopied(true);
  };
  return (
    <div class="new-key" role="status">
      <p>{props.children} Copy it now: it is shown only this once and cannot be recovered.</p>
      <div class="row">
        <input id={props.inputId} aria-label="Secret" readOnly value={props.secret} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" class="link" onClick={props.onDone}>
          Done
        </button>
      </div>
      <p class="warning">{props.hint}</p>
    </div>
  );
}
