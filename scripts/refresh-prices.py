"""Regenerates sdk/pricing/models.json, the one price table of the service and both SDKs.

The prices come from Pydantic's genai-prices package (the version pinned in
scripts/prices/requirements.txt), with our corrections from sdk/pricing/overlay.json on top,
each with its source and date. docs/pricing.md says what is taken and what is left unpriced.

    python scripts/refresh-prices.py             # writes sdk/pricing/models.json
    python scripts/refresh-prices.py --stdout    # prints the table instead
    python scripts/refresh-prices.py --unpriced  # upstream models left unpriced, and why (JSON)
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

from genai_prices import data
from genai_prices.types import (
    ClauseAnd,
    ClauseEquals,
    ClauseOr,
    ClauseRegex,
    ClauseStartsWith,
    ModelPrice,
    StartDateConstraint,
    TieredPrices,
)

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "sdk/pricing/models.json"
OVERLAY = ROOT / "sdk/pricing/overlay.json"

# Upstream price keys and the table's names for them. Token prices are USD per million tokens;
# web searches USD per thousand.
RATES = {
    "input_mtok": "input",
    "cache_read_mtok": "cached_input",
    "cache_write_mtok": "cache_write",
    "cache_write_1h_mtok": "cache_write_1h",
    "output_mtok": "output",
    "input_audio_mtok": "input_audio",
    "output_audio_mtok": "output_audio",
    "web_searches_kcount": "web_search_per_1k",
}
# Keys that do not change what an ordinary call costs here: file-search (storage) calls are not
# counted by the SDKs, and cached audio is charged at the cached-input rate (docs/pricing.md).
IGNORED = {"storage_searches_kcount", "cache_audio_read_mtok"}
# Image and video rates: a model is priced only when they equal its text input rate, because the
# SDKs count image and video input among `tokens_in` (docs/pricing.md).
SAME_AS_INPUT = {"input_image_mtok", "input_video_mtok", "cache_image_read_mtok"}
# Upstream price variants and the service tiers they are.
TIERS = {("processing", "batch"): "batch", ("service_tier", "flex"): "flex", ("service_tier", "priority"): "priority"}
# Upstream providers and the table (wire provider) they fill.
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "google": "gemini"}
# Bedrock's regional inference profiles (us., eu., ...) cost the same as the bare model id; the
# resolver maps them to it (sdk/pricing/README.md).
BEDROCK_ID = re.compile(r"^(regional\.|global\.)?anthropic\.(.+?)(-v\d+:\d+)?$")


def number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


class Unpriceable(Exception):
    """The model has a price this table cannot apply to a call, so it stays unpriced."""


def flat_rates(price: ModelPrice) -> tuple[dict, list[dict]]:
    """A ModelPrice as the table's base rates and tiers (each tier replaces every rate)."""
    values = {k: v for k, v in price.__dict__.items() if v is not None and not k.startswith("_")}
    for key in values:
        if key not in RATES and key not in IGNORED and key not in SAME_AS_INPUT:
            raise Unpriceable(key)
    for key in sorted(SAME_AS_INPUT & values.keys()):
        if values[key] != values.get("input_mtok"):
            raise Unpriceable(key)
    if "input_mtok" not in values:
        raise Unpriceable("no input price")
    thresholds = sorted({t.start for v in values.values() if isinstance(v, TieredPrices) for t in v.tiers})

    def at(value, above: int | None) -> Decimal:
        if not isinstance(value, TieredPrices):
            return value
        picked = value.base
        for tier in value.tiers:
            if above is not None and above >= tier.start:
                picked = tier.price
        return picked

    def rates(above: int | None) -> dict:
        out = {RATES[k]: number(at(v, above)) for k, v in values.items() if k in RATES}
        out.setdefault("output", 0)
        return out

    return rates(None), [{"above_input_tokens": t, **rates(t)} for t in thresholds]


def with_defaults(rates: dict) -> dict:
    """Cache reads and writes without a price of their own are charged as input (docs/pricing.md)."""
    ordered = {"input": rates["input"], "cached_input": rates.get("cached_input", rates["input"])}
    ordered["cache_write"] = rates.get("cache_write", rates["input"])
    for key in ("cache_write_1h", "output", "input_audio", "output_audio", "web_search_per_1k"):
        if key in rates:
            ordered[key] = rates[key]
    return ordered


def in_force(model, as_of: datetime.date) -> tuple[ModelPrice, datetime.date | None]:
    if isinstance(model.prices, ModelPrice):
        return model.prices, None
    chosen, since = model.prices[0].prices, None
    for conditional in model.prices:
        constraint = conditional.constraint
        if constraint is None:
            chosen, since = conditional.prices, None
        elif isinstance(constraint, StartDateConstraint):
            if constraint.start_date <= as_of:
                chosen, since = conditional.prices, constraint.start_date
        else:
            raise Unpriceable("time-of-day price")
    return chosen, since


def entry(model, provider, as_of: datetime.date) -> dict:
    price, since = in_force(model, as_of)
    base, tiers = flat_rates(price)
    result = with_defaults(base)
    if tiers:
        result["tiers"] = [{"above_input_tokens": t["above_input_tokens"], **with_defaults(t)} for t in tiers]
    service_tiers = {}
    for variant in model.price_variants or ():
        name = TIERS.get(next(iter(variant.when.items())) if len(variant.when) == 1 else None)
        if name is None or (variant.constraint is not None and variant.constraint.start_date > as_of):
            continue
        merged = ModelPrice(**{**price.__dict__, **{k: v for k, v in variant.prices.__dict__.items() if v is not None}})
        try:
            tier_base, tier_tiers = flat_rates(merged)
        except Unpriceable:
            continue
        service_tiers[name] = with_defaults(tier_base)
        if tier_tiers:
            service_tiers[name]["tiers"] = [{"above_input_tokens": t["above_input_tokens"], **with_defaults(t)} for t in tier_tiers]
    if service_tiers:
        result["service_tiers"] = dict(sorted(service_tiers.items()))
    result["source"] = (provider.pricing_urls or [""])[0]
    result["as_of"] = (since or as_of).isoformat()
    return result


def names(clause) -> list[str]:
    """The exact names a match clause lists: equals clauses, and the text of starts-with clauses
    (a name equal to the prefix is that model). Prefixes and regexes beyond that are not used: the
    resolver has no family fallback (sdk/pricing/README.md)."""
    if isinstance(clause, ClauseEquals):
        return [clause.equals.lower()]
    if isinstance(clause, ClauseStartsWith):
        text = clause.starts_with.lower()
        return [text] if re.fullmatch(r"[a-z0-9][a-z0-9.:-]*[a-z0-9]", text) else []
    if isinstance(clause, ClauseOr):
        return [name for c in clause.or_ for name in names(c)]
    if isinstance(clause, ClauseAnd):
        # An and-clause narrows a prefix (for example "not a TTS model"): its prefix alone is a name
        # only when the narrowing admits it, which the regexes here do.
        starts = [c for c in clause.and_ if isinstance(c, ClauseStartsWith)]
        regexes = [c for c in clause.and_ if isinstance(c, ClauseRegex)]
        return [n for c in starts for n in names(c) if all(re.search(r.regex, n) for r in regexes)]
    return []


def upstream_tables(as_of: datetime.date) -> tuple[dict, dict, dict]:
    models: dict[str, dict] = {p: {} for p in PROVIDERS.values()}
    aliases: dict[str, dict] = {p: {} for p in PROVIDERS.values()}
    skipped: dict[str, dict] = {p: {} for p in PROVIDERS.values()}
    by_id = {p.id: p for p in data.providers}
    for upstream_id, table in PROVIDERS.items():
        provider = by_id[upstream_id]
        for model in provider.models:
            key = model.id.lower().rstrip("-")
            try:
                models[table][key] = entry(model, provider, as_of)
            except Unpriceable as reason:
                skipped[table][key] = str(reason)
                continue
            for name in names(model.match):
                if name != key:
                    aliases[table].setdefault(name, key)
    # Claude on Bedrock: the global and regional (and bare) model ids, without the -v1:0 version.
    aws = by_id["aws"]
    for model in aws.models:
        match = BEDROCK_ID.match(model.id.lower())
        if not match:
            continue
        key = ("global." if match.group(1) == "global." else "") + "anthropic." + match.group(2)
        try:
            models["anthropic"][key] = entry(model, aws, as_of)
        except Unpriceable as reason:
            skipped["anthropic"][key] = str(reason)
    return models, aliases, skipped


def build(overlay: dict) -> dict:
    as_of = datetime.date.fromisoformat(overlay["as_of"])
    models, aliases, _ = upstream_tables(as_of)
    for table, corrections in overlay["corrections"].items():
        for correction in corrections:
            name = correction["model"]
            if "price" in correction:
                models[table][name] = {**correction["price"], "source": correction["source"], "as_of": correction["date"]}
            if correction.get("unpriced"):
                models[table].pop(name, None)
                aliases[table].pop(name, None)
            if "alias_of" in correction:
                aliases[table][name] = correction["alias_of"]
    for table in aliases:
        # An alias never shadows a model of its own, nor points at a model that is not priced.
        aliases[table] = {a: k for a, k in aliases[table].items() if a not in models[table] and k in models[table]}
    return {
        "schema": 3,
        "currency": "USD",
        "unit": "per_million_tokens",
        "upstream": {"package": "genai-prices", "version": version("genai-prices"), "as_of": overlay["as_of"]},
        "models": {t: dict(sorted(models[t].items())) for t in models},
        "aliases": {t: dict(sorted(aliases[t].items())) for t in aliases},
    }


def render(table: dict) -> str:
    """One line per model and per provider's aliases, so a refresh reads as a short diff."""
    head = {k: v for k, v in table.items() if k not in ("models", "aliases")}
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for section in ("models", "aliases"):
        lines.append(f'  "{section}": {{')
        providers = list(table[section].items())
        for i, (provider, entries) in enumerate(providers):
            lines.append(f"    {json.dumps(provider)}: {{")
            items = list(entries.items())
            for j, (name, value) in enumerate(items):
                lines.append(f"      {json.dumps(name)}: {json.dumps(value)}{',' if j < len(items) - 1 else ''}")
            lines.append("    }" + ("," if i < len(providers) - 1 else ""))
        lines.append("  }" + ("," if section == "models" else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    overlay = json.loads(OVERLAY.read_text())
    if "--unpriced" in sys.argv:
        _, _, skipped = upstream_tables(datetime.date.fromisoformat(overlay["as_of"]))
        print(json.dumps(skipped, indent=2, sort_keys=True))
        return 0
    text = render(build(overlay))
    if "--stdout" in sys.argv:
        sys.stdout.write(text)
    else:
        TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
