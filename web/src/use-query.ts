import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { messageOf } from "./api.js";

export interface QueryState<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` when `deps` change and, with `refreshMs`, again on that interval while the page is
 * visible, so new traces appear without a reload. Answers of superseded runs are dropped.
 */
export function useQuery<T>(load: () => Promise<T>, deps: unknown[], refreshMs?: number): QueryState<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const run = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const reload = useCallback(() => {
    const id = ++run.current;
    setState((s) => ({ ...s, loading: true }));
    loadRef.current().then(
      (data) => id === run.current && setState({ data, loading: false }),
      (error: unknown) => id === run.current && setState((s) => ({ ...s, error: messageOf(error), loading: false })),
    );
  }, []);

  useEffect(() => {
    setState({ loading: true });
    reload();
    if (!refreshMs) return;
    const timer = setInterval(() => document.visibilityState === "visible" && reload(), refreshMs);
    return () => clearInterval(timer);
  }, deps);

  return { data: state.data, error: state.error, loading: state.loading, reload };
}
