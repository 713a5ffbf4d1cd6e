import { ConfigError } from "../config/config.js";
import { UsageError } from "./usage-error.js";

const usage = `calltrace — self-hostable LLM usage tracing

Usage:
  calltrace serve [--port N] [--host H] [--data-dir DIR] [...]     start the service (same as npm start)
  calltrace keys create --plan PLAN [--name NAME] [--account ID] [--json]
  calltrace keys list [--json]
  calltrace keys revoke <id|prefix>
  calltrace traces export [--since ISO] [--until ISO] [--format jsonl|csv]
  calltrace traces import FILE... [--project ID | --plan PLAN] [--format jsonl|csv|otlp | --from langfuse|helicone] [--defer-indexes auto|on|off] [--json]
  calltrace accounts list [--json]
  calltrace accounts set-plan <account-id> <plan>
  calltrace accounts create --email EMAIL [--plan PLAN] --password-stdin
  calltrace prices check [--days N] [--json]                      models seen lately that the price table does not know
  calltrace alerts create --kind spend|errors|latency|unpriced|quota [--budget-usd N --window day|week|month|Nh]
                 [--window-minutes N --error-rate PCT --min-calls N | --p95-ms MS] [--thresholds 50,80,100]
                 [--key ID|--user ID|--tag T|--model M|--environment E|--metadata k=v]
                 [--webhook URL] [--slack URL] [--email ADDR] [--project ID] [--name NAME] [--json]
  calltrace alerts list [--project ID] [--json]
  calltrace alerts delete <rule-id> [--project ID]

Every command takes the configuration flags (--data-dir, --mongodb-uri, --plans-file, ...),
each also read from its environment variable (DATA_DIR, MONGODB_URI, PLANS_FILE, ...).`;

/** Loaded on demand, so a quick `keys list` does not load the server's protocol stack. */
const commands: Record<string, () => Promise<(argv: string[]) => Promise<void>>> = {
  serve: async () => (await import("./serve-command.js")).serveCommand,
  keys: async () => (await import("./keys-command.js")).keysCommand,
  traces: async () => (await import("./traces-command.js")).tracesCommand,
  accounts: async () => (await import("./accounts-command.js")).accountsCommand,
  prices: async () => (await import("./prices-command.js")).pricesCommand,
  alerts: async () => (await import("./alerts-command.js")).alertsCommand,
};

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(usage);
    return;
  }
  const load = commands[name];
  if (!load) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  await (await load())(rest);
}

// Output piped into `head` and the like: a closed pipe ends the command quietly.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    console.error(`calltrace: ${(error as Error).message}`);
    if (error instanceof UsageError) console.error(`\n${usage}`);
    process.exitCode = 2;
    return;
  }
  console.error(error);
  process.exitCode = 1;
});
