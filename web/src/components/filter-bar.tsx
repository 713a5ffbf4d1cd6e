import { useEffect, useState } from "preact/hooks";
import type { ApiKey } from "../../../gen/calltrace/v1/account_service_pb.js";
import { rangeMeaning, ranges, type Filters, type Range } from "../filters.js";

const rangeLabels: Record<Range, string> = { "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days", "90d": "Last 90 days", all: "All time", custom: "Custom…" };

/** Time range, key, provider, model and status; every change is applied at once. */
export function FilterBar({ filters, onChange, keys, models }: { filters: Filters; onChange: (f: Filters) => void; keys: ApiKey[]; models: string[] }) {
  const set = (patch: Partial<Filters>) => onChange({ ...filters, ...patch });
  // What is typed stays while the page re-renders (every refresh does) until it is applied on change.
  const [model, setModel] = useState(filters.model);
  useEffect(() => setModel(filters.model), [filters.model]);
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()}>
      <label>
        Time
        <select name="range" value={filters.range} onChange={(e) => set({ range: e.currentTarget.value as Range })}>
          {(Object.keys(ranges) as Range[]).map((r) => (
            <option value={r}>{rangeLabels[r]}</option>
          ))}
        </select>
      </label>
      {filters.range === "custom" && (
        <>
          <label>
            From (UTC)
            <input name="from" type="datetime-local" value={filters.from} onChange={(e) => set({ from: e.currentTarget.value })} />
          </label>
          <label>
            To (UTC)
            <input name="to" type="datetime-local" value={filters.to} onChange={(e) => set({ to: e.currentTarget.value })} />
          </label>
        </>
      )}
      <label>
        Key
        <select name="key" value={filters.keyId} onChange={(e) => set({ keyId: e.currentTarget.value })}>
          <option value="">All keys</option>
          {keys.map((k) => (
            <option value={k.id}>
              {k.name || "(unnamed)"} · ct_{k.prefix}…{k.revokedAt ? " (revoked)" : ""}
            </option>
          ))}
        </select>
      </label>
      <label>
        Provider
        <select name="provider" value={filters.provider} onChange={(e) => set({ provider: e.currentTarget.value })}>
          <option value="">All providers</option>
          <option value="openai">openai</option>
          <option value="anthropic">anthropic</option>
          <option value="gemini">gemini</option>
        </select>
      </label>
      <label>
        Model
        <input
          name="model"
          list="known-models"
          placeholder="All models"
          title="Any model whose name contains this text, ignoring case"
          value={model}
          onInput={(e) => setModel(e.currentTarget.value)}
          onChange={(e) => set({ model: e.currentTarget.value.trim() })}
        />
        <datalist id="known-models">
          {models.map((m) => (
            <option value={m} />
          ))}
        </datalist>
      </label>
      <label>
        Status
        <select name="status" value={filters.status} onChange={(e) => set({ status: e.currentTarget.value })}>
          <option value="">Any status</option>
          <option value="success">success</option>
          <option value="error">error</option>
        </select>
      </label>
      <p class="muted small range-meaning">{rangeMeaning}</p>
    </form>
  );
}
