/** What an action came to: a status when it worked, an alert saying why when it did not. */
export function Outcome({ result }: { result: { ok: boolean; text: string } | undefined }) {
  if (!result) return null;
  return (
    <p class={result.ok ? "ok" : "error"} role={result.ok ? "status" : "alert"}>
      {result.text}
    </p>
  );
}

/** Why an action failed, announced to screen readers; nothing when it did not. */
export function ErrorNote({ error }: { error: string | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}
