import type { TraceRecorder } from "./trace-recorder.js";

/** How to trace one provider client library. */
export interface Instrumentation {
  /** The npm package it instruments. */
  packageName: string;
  /**
   * Patches one loaded copy of the package (its CommonJS exports or its ESM
   * namespace: the two builds hold separate classes) and returns the undo
   * functions, one per patched method.
   */
  patch(moduleExports: unknown, recorder: TraceRecorder): Array<() => void>;
}
