import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import {
  type CustomPrice,
  type CustomPriceSpec,
  type CustomPriceSpecSchema,
  PriceMatch,
  type RepriceJob,
  RepriceState,
  type ResolvePriceResponse,
  type TieredPrice,
} from "../../../gen/calltrace/v1/price_service_pb.js";
import { messageOf, prices as priceService } from "../api.js";
import { QueryStatus } from "../components/query-status.js";
import { can, useTeam } from "../team.js";
import { useQuery } from "../use-query.js";
import { ErrorNote } from "../components/outcome.js";

/** The rates the form edits, with their labels: USD per million tokens (web searches per thousand). */
const rateFields = [
  ["input", "Input"],
  ["output", "Output"],
  ["cachedInput", "Cached input"],
  ["cacheWrite", "Cache write (5 min)"],
  ["cacheWrite1h", "Cache write (1 h)"],
  ["inputAudio", "Audio input"],
  ["outputAudio", "Audio output"],
  ["webSearchPer1k", "Web searches / grounding (per 1,000)"],
] as const;
type RateField = (typeof rateFields)[number][0];
const otherTiers = ["batch", "flex", "priority"] as const;
const matchNames: Record<PriceMatch, string> = {
  [PriceMatch.UNSPECIFIED]: "",
  [PriceMatch.EXACT]: "exact",
  [PriceMatch.PREFIX]: "prefix",
  [PriceMatch.REGEX]: "regex",
};

/** The form's text fields: rates as typed (empty: not given), dates as YYYY-MM-DD (UTC). */
interface Draft {
  provider: string;
  match: PriceMatch;
  pattern: string;
  rates: Record<RateField, string>;
  tiers: Record<(typeof otherTiers)[number], { input: string; output: string }>;
  from: string;
  until: string;
}

const emptyRates = () => Object.fromEntries(rateFields.map(([f]) => [f, ""])) as Record<RateField, string>;
const emptyDraft = (): Draft => ({
  provider: "openai",
  match: PriceMatch.EXACT,
  pattern: "",
  rates: emptyRates(),
  tiers: { batch: { input: "", output: "" }, flex: { input: "", output: "" }, priority: { input: "", output: "" } },
  from: "",
  until: "",
});
const text = (n: number | undefined) => (n === undefined ? "" : String(n));
const day = (t: CustomPriceSpec["effectiveFrom"]) => (t ? timestampDate(t).toISOString().slice(0, 10) : "");

function draftOf(spec: CustomPriceSpec): Draft {
  const rates = spec.standard?.rates;
  const tier = (t: TieredPrice | undefined) => ({ input: text(t?.rates?.input), output: text(t?.rates?.output) });
  return {
    provider: spec.provider,
    match: spec.match,
    pattern: spec.pattern,
    rates: Object.fromEntries(rateFields.map(([f]) => [f, text(rates?.[f])])) as Record<RateField, string>,
    tiers: { batch: tier(spec.batch), flex: tier(spec.flex), priority: tier(spec.priority) },
    from: day(spec.effectiveFrom),
    until: day(spec.effectiveUntil),
  };
}

type SpecInit = MessageInitShape<typeof CustomPriceSpecSchema>;

function specOf(d: Draft, keep: CustomPriceSpec | undefined): SpecInit {
  const rates: Partial<Record<RateField, number>> = {};
  for (const [f] of rateFields) if (d.rates[f].trim() !== "") rates[f] = Number(d.rates[f]);
  const spec: SpecInit = {
    provider: d.provider,
    match: d.match,
    pattern: d.pattern,
    // Long-context tiers are kept as they were (set over the API); the form edits the rest.
    standard: { rates: { input: 0, output: 0, ...rates }, tiers: keep?.standard?.tiers ?? [] },
  };
  for (const t of otherTiers) {
    const { input, output } = d.tiers[t];
    if (input.trim() !== "" || output.trim() !== "") spec[t] = { rates: { input: Number(input), output: Number(output) } };
  }
  if (d.from) spec.effectiveFrom = timestampFromDate(new Date(`${d.from}T00:00:00Z`));
  if (d.until) spec.effectiveUntil = timestampFromDate(new Date(`${d.until}T00:00:00Z`));
  return spec;
}

/** Settings' Prices section: the project's custom prices, which one applies to a model, and re-pricing. */
export function ProjectPrices() {
  const t = useTeam();
  const editable = can(t.membership.role, "project.settings");
  const list = useQuery(() => priceService.listPrices({}).then((r) => r.prices), [t.project.id]);
  const [editing, setEditing] = useState<CustomPrice | "new">();
  return (
    <div class="card stack" data-section="prices">
      <h2>Prices</h2>
      <p class="muted small">
        The project's own prices, in USD per million tokens, applied before the bundled catalog to the server's price of every call (OTLP spans and the check of
        a client's cost). Exact beats prefix beats regex; then the newest effective date.
      </p>
      <QueryStatus state={list} what="the prices" />
      {list.data && list.data.length === 0 && <p class="muted">No custom prices: every call is priced from the catalog.</p>}
      {list.data && list.data.length > 0 && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Custom prices">
          <table>
            <thead>
              <tr>
                <th>Provider</th>
                <th>Match</th>
                <th>Pattern</th>
                <th class="num">Input</th>
                <th class="num">Output</th>
                <th>Effective (UTC)</th>
                {editable && (
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {list.data.map((p) => (
                <PriceRow key={p.id} price={p} editable={editable} onEdit={() => setEditing(p)} onDeleted={list.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {editable && editing === undefined && (
        <button type="button" onClick={() => setEditing("new")}>
          Add a price
        </button>
      )}
      {editable && editing !== undefined && (
        <PriceForm
          key={editing === "new" ? "new" : editing.id}
          price={editing === "new" ? undefined : editing}
          onDone={() => {
            setEditing(undefined);
            list.reload();
          }}
        />
      )}
      <WhichPrice />
      {editable && <Reprice />}
    </div>
  );
}

function PriceRow({ price, editable, onEdit, onDeleted }: { price: CustomPrice; editable: boolean; onEdit: () => void; onDeleted: () => void }) {
  const spec = price.spec!;
  const [error, setError] = useState<string>();
  const remove = async () => {
    try {
      await priceService.deletePrice({ priceId: price.id });
      onDeleted();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const range = `${day(spec.effectiveFrom) || "always"} – ${day(spec.effectiveUntil) || "on"}`;
  return (
    <tr data-price={price.id}>
      <td>{spec.provider}</td>
      <td>{matchNames[spec.match]}</td>
      <td>
        <code>{spec.pattern}</code>
      </td>
      <td class="num">{spec.standard?.rates?.input}</td>
      <td class="num">{spec.standard?.rates?.output}</td>
      <td class="nowrap">{range}</td>
      {editable && (
        <td class="actions">
          <button type="button" class="link" onClick={onEdit}>
            Edit<span class="sr-only"> {spec.pattern}</span>
          </button>{" "}
          <button type="button" class="link danger" onClick={remove}>
            Delete<span class="sr-only"> {spec.pattern}</span>
          </button>
          {error && (
            <span class="error" role="alert">
              {error}
            </span>
          )}
        </td>
      )}
    </tr>
  );
}

function PriceForm({ price, onDone }: { price: CustomPrice | undefined; onDone: () => void }) {
  const [d, setDraft] = useState<Draft>(price ? draftOf(price.spec!) : emptyDraft());
  const [error, setError] = useState<string>();
  const set = (change: Partial<Draft>) => setDraft({ ...d, ...change });
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      const spec = specOf(d, price?.spec);
      if (price) await priceService.updatePrice({ priceId: price.id, spec });
      else await priceService.createPrice({ spec });
      onDone();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  return (
    <form class="stack" data-section="price-form" onSubmit={save}>
      <h3>{price ? "Edit price" : "New price"}</h3>
      <div class="row">
        <label>
          Provider
          <select name="price-provider" value={d.provider} onChange={(e) => set({ provider: e.currentTarget.value })}>
            <option value="openai">openai</option>
            <option value="anthropic">anthropic</option>
            <option value="gemini">gemini</option>
          </select>
        </label>
        <label>
          Match
          <select name="price-match" value={d.match} onChange={(e) => set({ match: Number(e.currentTarget.value) as PriceMatch })}>
            <option value={PriceMatch.EXACT}>exact id</option>
            <option value={PriceMatch.PREFIX}>prefix</option>
            <option value={PriceMatch.REGEX}>regular expression (RE2)</option>
          </select>
        </label>
        <label>
          Model id, prefix or pattern
          <input name="price-pattern" required maxLength={256} value={d.pattern} onInput={(e) => set({ pattern: e.currentTarget.value })} />
        </label>
      </div>
      <fieldset class="row">
        <legend>Standard rates (USD per million tokens; empty: cached input and cache writes at the input rate, the others unpriced)</legend>
        {rateFields.map(([f, label]) => (
          <label>
            {label}
            <input
              name={`price-${f}`}
              type="number"
              min={0}
              step="any"
              required={f === "input" || f === "output"}
              value={d.rates[f]}
              onInput={(e) => set({ rates: { ...d.rates, [f]: e.currentTarget.value } })}
            />
          </label>
        ))}
      </fieldset>
      <fieldset class="row">
        <legend>Other service tiers (empty: calls in that tier are unpriced)</legend>
        {otherTiers.map((tier) =>
          (["input", "output"] as const).map((f) => (
            <label>
              {`${tier[0]!.toUpperCase()}${tier.slice(1)} ${f}`}
              <input
                name={`price-${tier}-${f}`}
                type="number"
                min={0}
                step="any"
                value={d.tiers[tier][f]}
                onInput={(e) => set({ tiers: { ...d.tiers, [tier]: { ...d.tiers[tier], [f]: e.currentTarget.value } } })}
              />
            </label>
          )),
        )}
      </fieldset>
      <div class="row">
        <label>
          Effective from (UTC day, empty: always)
          <input name="price-from" type="date" value={d.from} onInput={(e) => set({ from: e.currentTarget.value })} />
        </label>
        <label>
          Until (exclusive, empty: on)
          <input name="price-until" type="date" value={d.until} onInput={(e) => set({ until: e.currentTarget.value })} />
        </label>
      </div>
      <div class="row">
        <button type="submit" class="primary">
          {price ? "Save price" : "Add price"}
        </button>
        <button type="button" class="link" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}

function WhichPrice() {
  const [provider, setProvider] = useState("openai");
  const [model, setModel] = useState("");
  const [answer, setAnswer] = useState<ResolvePriceResponse>();
  const [error, setError] = useState<string>();
  const ask = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      setAnswer(await priceService.resolvePrice({ provider, model }));
    } catch (e) {
      setAnswer(undefined);
      setError(messageOf(e));
    }
  };
  const cost = answer?.exampleCostUsd === undefined ? "" : ` 1M tokens in and 1M out cost $${answer.exampleCostUsd}.`;
  return (
    <form class="stack" data-section="which-price" onSubmit={ask}>
      <h3>Which price applies?</h3>
      <div class="row">
        <label>
          Provider
          <select name="which-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            <option value="openai">openai</option>
            <option value="anthropic">anthropic</option>
            <option value="gemini">gemini</option>
          </select>
        </label>
        <label>
          Model id
          <input name="which-model" required maxLength={256} value={model} onInput={(e) => setModel(e.currentTarget.value)} />
        </label>
        <button type="submit">Check</button>
      </div>
      <p role="status" data-answer>
        {answer &&
          (answer.custom
            ? `This project's ${matchNames[answer.custom.spec!.match]} price "${answer.custom.spec!.pattern}".${cost}`
            : answer.catalogModel
              ? `The catalog's ${answer.catalogModel}.${cost}`
              : "No price: calls to this model are unpriced.")}
      </p>
      <ErrorNote error={error} />
    </form>
  );
}

function Reprice() {
  const today = new Date().toISOString().slice(0, 10);
  const [from, setFrom] = useState(new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10));
  const [until, setUntil] = useState("");
  const [job, setJob] = useState<RepriceJob>();
  const [error, setError] = useState<string>();
  const running = job?.state === RepriceState.RUNNING;
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(async () => {
      try {
        setJob((await priceService.getReprice({ jobId: job.id })).job);
      } catch (e) {
        setError(messageOf(e));
      }
    }, 500);
    return () => clearTimeout(timer);
  }, [job]);
  const start = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const range = { from: timestampFromDate(new Date(`${from}T00:00:00Z`)), ...(until ? { until: timestampFromDate(new Date(`${until}T00:00:00Z`)) } : {}) };
      setJob((await priceService.startReprice(range)).job);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const total = Number(job?.total ?? 0n);
  const done = Math.min(Number(job?.done ?? 0n), total);
  return (
    <form class="stack" data-section="reprice" onSubmit={start}>
      <h3>Re-price stored traces</h3>
      <p class="muted small">Recomputes the server's price and the price check of the traces received in the range, with the prices above. What clients sent is kept.</p>
      <div class="row">
        <label>
          From (UTC day)
          <input name="reprice-from" type="date" required max={today} value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          Until (exclusive, empty: now)
          <input name="reprice-until" type="date" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={running}>
          Re-price
        </button>
      </div>
      {job && (
        <div class="stack">
          <progress aria-label="Re-price progress" max={Math.max(total, 1)} value={job.state === RepriceState.DONE ? Math.max(total, 1) : done} />
          <p role="status" data-reprice-state={RepriceState[job.state].toLowerCase()}>
            {job.state === RepriceState.DONE
              ? `Done: ${total} traces looked at, ${job.changed} re-priced.`
              : job.state === RepriceState.FAILED
                ? `Failed after ${done} of ${total} traces: ${job.error}`
                : `${done} of ${total} traces…`}
          </p>
        </div>
      )}
      <ErrorNote error={error} />
    </form>
  );
}
