// `BENCH_ONLY=otlp-reader npm run bench`: CPU per span of reading an OTLP Export, with calltrace's
// reader (src/otlp/otlp-protobuf.ts, D44) against protobuf-es alone (fromBinary and
// exportOfMessage: the reader's fallback, and what OTLP_READER=false reads with), in the same run,
// taking turns. BENCH_READER_REF=<git ref> adds the reader as it was at that commit, and the
// current reader's ratio to it: how a change of the reader was judged (issue #27: protobuf-es's
// BinaryReader at most 5 % slower per span than the hand-written reader).
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { ExportTraceServiceRequestSchema } from "../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { exportOfMessage, type OtlpExport } from "../src/otlp/otlp-export.js";
import { readExport } from "../src/otlp/otlp-protobuf.js";
import { exportTemplate } from "./support/otlp-load.js";
import { repoRoot } from "./support/processes.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

/** The OTLP bench's Export: 100 GenAI spans, as a BatchSpanProcessor sends them. */
const spansPerExport = 100;
const body = exportTemplate(spansPerExport).template;
const rounds = 7;
/** Exports read per turn: about a second of reading on this machine. */
const exportsPerTurn = 2000;

type Reader = (body: Uint8Array) => OtlpExport | undefined;
const readers: [string, Reader][] = [
  ["protobuf-es (fromBinary, exportOfMessage; baseline)", (b) => exportOfMessage(fromBinary(ExportTraceServiceRequestSchema, b))],
  ["calltrace's reader", readExport],
];

const ref = process.env.BENCH_READER_REF;
const refFile = `${repoRoot}/src/otlp/otlp-protobuf.bench-ref.ts`;
if (ref) {
  writeFileSync(refFile, execFileSync("git", ["show", `${ref}:src/otlp/otlp-protobuf.ts`], { cwd: repoRoot }));
  try {
    const old = (await import(refFile)) as { readExport: Reader };
    readers.push([`calltrace's reader at ${ref}`, old.readExport]);
  } finally {
    rmSync(refFile);
  }
}

for (const [name, read] of readers) {
  const spans = read(body)?.[0]?.scopeSpans[0]?.spans.length;
  if (spans !== spansPerExport) throw new Error(`${name} read ${spans} spans of ${spansPerExport}`);
}

/** µs of CPU per span for one turn of `read`. */
function turn(read: Reader): number {
  const began = process.cpuUsage();
  for (let i = 0; i < exportsPerTurn; i++) read(body);
  const used = process.cpuUsage(began);
  return (used.user + used.system) / (exportsPerTurn * spansPerExport);
}

for (const [, read] of readers) turn(read); // warm-up
const perSpan: number[][] = readers.map(() => []);
for (let round = 0; round < rounds; round++) {
  console.log(`[bench otlp-reader] round ${round + 1} of ${rounds}`);
  for (const [i, [, read]] of readers.entries()) perSpan[i]!.push(turn(read));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ratios = (i: number, to: number) => perSpan[i]!.map((us, round) => us / perSpan[to]![round]!);
const fmt = (n: number) => n.toFixed(2);
const rows = readers.map(([name], i) => [name, fmt(median(perSpan[i]!)), fmt(median(ratios(i, 0)))]);
let verdict = "";
if (ref) {
  const toRef = ratios(1, 2);
  verdict = `\n\nThe current reader per span against the reader at ${ref}: ${fmt(median(toRef))}× (rounds: ${toRef.map(fmt).join(", ")}).`;
}
const markdown = `## OTLP protobuf reader per span (\`BENCH_ONLY=otlp-reader npm run bench\`, bench/otlp-reader.ts)

${machineLine()}; one Export of ${spansPerExport} GenAI spans (the OTLP bench's), read ${exportsPerTurn} times per turn, the readers taking turns for ${rounds} rounds after a warm-up; µs of CPU (user and system) per span, median over rounds, and the median over rounds of the ratio to protobuf-es in the same round. Machine load (1-minute load average on its 2 cores, shared): ${(await import("node:os")).loadavg()[0]!.toFixed(1)} at the end.

${table(["reader", "µs per span", "ratio to protobuf-es"], rows)}${verdict}`;
console.log(markdown);
writeResultsSection("otlp-reader", markdown);
