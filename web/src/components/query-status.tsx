import type { QueryState } from "../use-query.js";

/** A query's loading and error states, so a slow or failing network never shows as an empty page. */
export function QueryStatus({ state, what }: { state: Pick<QueryState<unknown>, "data" | "error" | "loading">; what: string }) {
  if (state.error) {
    return (
      <p class="error" role="alert">
        Could not load {what}: {state.error}
      </p>
    );
  }
  if (state.loading && state.data === undefined) {
    return (
      <p class="muted loading" role="status">
        Loading {what}…
      </p>
    );
  }
  return null;
}
