// OTLP ingest throughput: OTLP/HTTP protobuf Exports of 100 GenAI spans each against the spec's
// REST path, both on one calltrace process and embedded store, taking turns in rounds: stored spans
// per second against REST traces per second, and the service's CPU time per stored trace; the
// Exports also with attributed spans (a user, a session, two metadata attributes), into a store
// that already holds a million traces.
import { readFileSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { type LoadResult, wrkPost } from "./support/load.js";
import { exportTemplate, otlpExportLoad, otlpMetadataAttributes } from "./support/otlp-load.js";
import { benchStore, compiledService, loadSettings, seededStore, startListening, storedTraceCount, waitUntilIdle } from "./support/processes.js";
import { guard, machineLine, table, writeResultsSection } from "./support/results.js";
import { spanFloor } from "./support/span-floor.js";
import { traceBody } from "../test/support/test-service.js";

const { rounds, settings } = loadSettings();
const spansPerExport = 100;
/** Exporters sending one Export at a time each, as a BatchSpanProcessor does. */
const exporters = 10;

const { dataDir, env, key } = benchStore();
const body = JSON.stringify(traceBody(key));
const headers = { "Content-Type": "application/json", Authorization: `Bearer ${key}` };
const progress = (what: string) => console.error(`[bench otlp-ingest] ${what}`);

const loadAtStart = loadavg()[0]!;
const { seeding } = seededStore();
const server = await startListening(compiledService("serve", "--port", "0"), { ...env, OTLP_METADATA_ATTRIBUTES: otlpMetadataAttributes });
const url = `http://127.0.0.1:${server.port}`;
/** The service process's CPU time (all threads), in ms: what a stored trace costs it, whatever the machine's load. */
const cpuMs = () => {
  const fields = readFileSync(`/proc/${server.child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
const rest: (LoadResult & { cpuUsPerTrace: number })[] = [];
type OtlpRound = Awaited<ReturnType<typeof otlpExportLoad>> & { cpuUsPerTrace: number };
const otlp: OtlpRound[] = [];
const otlpAttributed: OtlpRound[] = [];
/** An OTLP turn: its warm-up apart, then the measured run with the service's CPU over it. */
const otlpTurn = async (warmupSeconds: number, attributed: boolean): Promise<OtlpRound> => {
  if (warmupSeconds > 0)
    await otlpExportLoad(url, key, { ...settings, connections: exporters, seconds: warmupSeconds, warmupSeconds: 0 }, spansPerExport, attributed);
  const cpu = cpuMs();
  const o = await otlpExportLoad(url, key, { ...settings, connections: exporters, warmupSeconds: 0 }, spansPerExport, attributed);
  return { ...o, cpuUsPerTrace: ((cpuMs() - cpu) * 1000) / (o.exports * spansPerExport) };
};
for (let round = 0; round < rounds; round++) {
  const warmupSeconds = round === 0 ? settings.warmupSeconds : 0;
  // Each turn starts once the service is idle: its writer thread and WAL checkpoints go on after a turn.
  await waitUntilIdle([server.child.pid!]);
  progress(`round ${round + 1} of ${rounds}: REST`);
  if (warmupSeconds > 0) await wrkPost(`${url}/v1/traces`, body, headers, { ...settings, seconds: warmupSeconds, warmupSeconds: 0 });
  const cpu = cpuMs();
  const r = await wrkPost(`${url}/v1/traces`, body, headers, { ...settings, warmupSeconds: 0 });
  rest.push({ ...r, cpuUsPerTrace: ((cpuMs() - cpu) * 1000) / (r.requestsPerSecond * settings.seconds) });
  await waitUntilIdle([server.child.pid!]);
  progress(`round ${round + 1} of ${rounds}: OTLP`);
  otlp.push(await otlpTurn(warmupSeconds, false));
  await waitUntilIdle([server.child.pid!]);
  progress(`round ${round + 1} of ${rounds}: OTLP, attributed spans`);
  otlpAttributed.push(await otlpTurn(warmupSeconds, true));
}
const rss = server.peakRssMiB();
await server.stop();
const stored = await storedTraceCount(env);
const loadAtEnd = loadavg()[0]!;
rmSync(dataDir, { recursive: true, force: true });

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const ratios = otlp.map((o, i) => o.spansPerSecond / rest[i]!.requestsPerSecond);
const ratio = median(ratios);
const restRate = median(rest.map((r) => r.requestsPerSecond));
// The target's rate, and the CPU it leaves each span on the machine's 2 cores (the load driver's share included).
const targetRate = 10 * restRate;
const budgetUs = (2 * 1e6) / targetRate;
progress("the floor of a span's cost");
const floor = await spanFloor(exportTemplate(spansPerExport).template, targetRate);
const floorUs = floor.readUs + floor.keyedRowUs;
const otlpErrors = otlp.reduce((n, o) => n + o.errors, 0);
const attributedRatios = otlpAttributed.map((o, i) => o.spansPerSecond / otlp[i]!.spansPerSecond);
const spansGuard = guard("OTLP spans/s ≥ 0.9× REST traces/s", ratio, 0.9);
console.error(`[bench otlp-ingest] guard ${spansGuard.line}`);
const rows = [
  [
    "REST `POST /v1/traces`, one trace per request (wrk, 50 connections)",
    `${fmt(restRate, 0)} traces/s`,
    fmt(median(rest.map((r) => r.p50Ms)), 2),
    fmt(Math.max(...rest.map((r) => r.p99Ms)), 2),
    fmt(median(rest.map((r) => r.cpuUsPerTrace)), 0),
    "1",
    rest.reduce((n, r) => n + r.errors, 0),
  ],
  [
    `OTLP/HTTP protobuf, ${spansPerExport} GenAI spans per Export (${exporters} exporters)`,
    `${fmt(median(otlp.map((o) => o.requestsPerSecond)), 0)} Exports/s = **${fmt(median(otlp.map((o) => o.spansPerSecond)), 0)} spans/s**`,
    fmt(median(otlp.map((o) => o.p50Ms)), 2),
    fmt(Math.max(...otlp.map((o) => o.p99Ms)), 2),
    fmt(median(otlp.map((o) => o.cpuUsPerTrace)), 0),
    `**${fmt(ratio, 2)}** (${ratios.map((x) => fmt(x, 2)).join(", ")})`,
    otlpErrors,
  ],
  [
    `OTLP/HTTP protobuf, ${spansPerExport} attributed GenAI spans per Export (${exporters} exporters)`,
    `${fmt(median(otlpAttributed.map((o) => o.requestsPerSecond)), 0)} Exports/s = **${fmt(median(otlpAttributed.map((o) => o.spansPerSecond)), 0)} spans/s**`,
    fmt(median(otlpAttributed.map((o) => o.p50Ms)), 2),
    fmt(Math.max(...otlpAttributed.map((o) => o.p99Ms)), 2),
    fmt(median(otlpAttributed.map((o) => o.cpuUsPerTrace)), 0),
    `**${fmt(median(attributedRatios), 2)}× plain OTLP** (${attributedRatios.map((x) => fmt(x, 2)).join(", ")})`,
    otlpAttributed.reduce((n, o) => n + o.errors, 0),
  ],
];
const markdown = `## OTLP ingest against REST (\`npm run bench\`, bench/otlp-ingest.ts)

${machineLine()}; one calltrace process on the embedded store, which held ${seeding.traces.toLocaleString("en-US")} attributed traces before the run (as bench/ingest.ts's), loaded in turns: REST (wrk -t1, 50 connections) then OTLP/HTTP protobuf Exports (${exporters} exporters, each sending one Export at a time on a keep-alive connection), ${settings.warmupSeconds} s warm-up each, then ${rounds} rounds of ${settings.seconds} s each. Every Export is new (fresh trace and response ids patched into one encoded template of OpenLLMetry-like \`openai.chat\` spans), so each span is mapped, priced, validated, checked against the calls stored before (D37) and durably committed (SQLite WAL, synchronous=FULL, group commit) before the Export's 200; an Export that was not 200, or whose response reported a rejected span, counts as an error. Throughput and p50 are the median round, p99 the worst round (per request: one trace for REST, one Export of ${spansPerExport} for OTLP); the ratio is OTLP's stored spans/s over REST's traces/s in the same round (each round's in brackets). CPU µs per trace is the service process's CPU time (all threads) over the traces stored in the round, a figure the machine's load moves less than throughput. Peak RSS ${fmt(rss, 0)} MiB; ${stored} traces were in the store after the run. Machine load (1-minute load average on its 2 cores, shared with other work): ${loadAtStart.toFixed(1)} at the start, ${loadAtEnd.toFixed(1)} at the end.

${table(["target", "throughput", "p50 ms", "p99 ms", "CPU µs per trace", "ratio to REST traces/s", "non-2xx / errors"], rows)}

The attributed Exports' spans each carry a \`user.id\` of 10,000, a \`session.id\` drawn from a million and two attributes kept as metadata (\`feature\` of 20 values, \`team\` of 5, the service's OTLP_METADATA_ATTRIBUTES), drawn afresh for every span of every Export, and the resource's environment (OTLP has no tags); their ratio is to the plain Exports' spans/s in the same round.

Regression guard (the retired 10× target's floor, issue 27): ${spansGuard.markdown}, every span committed before its 200 (${otlpErrors} errors).

The floor, measured in this run once the service had stopped (bench/support/span-floor.ts, one thread, the service's compiled code): 10× the REST path's ${fmt(restRate, 0)} traces/s is ${fmt(targetRate, 0)} spans/s, which leaves each span ${fmt(budgetUs, 1)} µs of CPU on the machine's 2 cores, the load driver's share included. Reading a span of this load's Exports and mapping it to a priced trace costs ${fmt(floor.readUs, 1)} µs. Its durable row (WAL, synchronous=FULL, commits of 1,000 rows) in the store's traces table costs ${fmt(floor.rowUs, 1)} µs with none of its indexes, and ${fmt(floor.keyedRowUs, 1)} µs with only the one the retry promise needs, the unique call key (D37, D44), whose start second holds as many keys as it would at the target's rate. Reading and a deduplicated row alone come to ${fmt(floorUs, 1)} µs, ${fmt(floorUs / budgetUs, 2)}× the budget, before HTTP, the key's check, validation, the hand-over to the writer thread, the nested-span look-up, the dashboard's indexes and roll-ups, and garbage collection. ${floorUs > budgetUs ? `So with SQLite, the embedded store's engine, no design that reads every span and keeps a durable, deduplicated row of it before the 200 reaches 10× on this machine; without the retry key, reading and the bare row would still take ${fmt(floor.readUs + floor.rowUs, 1)} µs of the ${fmt(budgetUs, 1)}.` : `So the floor leaves ${fmt(budgetUs - floorUs, 1)} µs per span for the rest of the path.`}

Where the time goes: an Export pays once for what a REST request pays per trace (HTTP parsing, the key's check, the per-minute window, the quota round trip, the response), but every span still costs its own work: about as much CPU, all threads together, as a whole REST request (the CPU column). On the event loop, about 25 µs per span (CPU time per thread, measured apart from this run): reading the protobuf with our reader of the fields the mapping uses (D44; protobuf-es's message objects and their garbage cost about a third of the event loop before), mapping and pricing (2 µs), validation (2.5 µs), the look-up of the spans already stored in its OTLP trace, which finds the other half of a nested call (about 2.5 µs with random ids), the hand-over to the writer thread, and collecting the garbage all this leaves. On the SQLite writer thread, about 46 µs per span on a store of 700,000 OTLP traces with random ids (40 µs timed in the writer alone): the row's insert into the traces table and its indexes, of which the index by OTLP trace id (how nested spans are found) takes its keys at random places and costs about 17 µs; the call key that makes a retried Export or a second instrumentation's span store nothing twice leads with the span's start second (D44), so its inserts land in the current second's part of the index rather than anywhere in it, and it is looked up in the seconds either side; and the daily roll-ups. That single writer thread is this path's limit. The 10× target would need each span to cost the service about a tenth of what a REST request costs, under 10 µs in all, which a durable row per span with a nested-span look-up by random trace id does not allow on this store. Runs before D44's change of this load (ids sharing 100 prefixes and one start time for every span, which hid the cost of random index inserts: 1.10×) do not compare with these. The figures were taken on a machine shared with other work (load average above); they move by tens of percent between rounds.`;
console.log(markdown);
writeResultsSection("otlp-ingest", markdown);
