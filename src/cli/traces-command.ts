import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { downloadLines, type DownloadFormat } from "../download/trace-lines.js";
import { openStore } from "../store/open-store.js";
import { importCommand } from "./import-command.js";
import { UsageError } from "./usage-error.js";

/** `calltrace traces export`: stored traces to stdout, oldest first; `traces import`: files into a project. */
export async function tracesCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, {
    since: { type: "string" },
    until: { type: "string" },
    format: { type: "string" },
    project: { type: "string" },
    plan: { type: "string" },
    from: { type: "string" },
    json: { type: "boolean" },
    "defer-indexes": { type: "string" },
  });
  if (positionals[0] === "import") {
    const config = resolveConfig(values);
    const store = await openStore(config);
    try {
      return await importCommand(store, config, { ...values, deferIndexes: values["defer-indexes"], files: positionals.slice(1) });
    } finally {
      await store.close();
    }
  }
  if (positionals[0] !== "export") throw new UsageError("traces needs: export or import");
  const format = (values.format ?? "jsonl") as DownloadFormat;
  if (format !== "jsonl" && format !== "csv") throw new UsageError("--format must be jsonl or csv");
  const since = isoDate("--since", values.since);
  const until = isoDate("--until", values.until);
  const store = await openStore(resolveConfig(values));
  try {
    for await (const line of downloadLines(store.exportTraces({ ...(since ? { since } : {}), ...(until ? { until } : {}) }), format)) {
      if (!process.stdout.write(line)) await new Promise((resolve) => process.stdout.once("drain", resolve));
    }
  } finally {
    await store.close();
  }
}

function isoDate(flag: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new UsageError(`${flag} must be an ISO 8601 date or time, got ${JSON.stringify(value)}`);
  return date;
}
