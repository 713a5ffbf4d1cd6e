"""Cost of a call from the shared price table (sdk/pricing/models.json).

The resolution rule and the cost formula are the ones in sdk/pricing/README.md,
implemented to give the same answer as the TypeScript SDK (and the service) for
every name and count; sdk/pricing/vectors.json checks both.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Dict, Mapping, NamedTuple, Optional, Tuple

logger = logging.getLogger("calltrace")

SCHEMA = 3

# Where the table is: inside an installed package (put there by hatch_build.py),
# or, for an editable or in-repo install, the repository's one copy.
_PACKAGED_TABLE = Path(__file__).with_name("models.json")
_REPO_TABLE = Path(__file__).resolve().parents[3] / "pricing" / "models.json"

# Step 1 of the rule: Bedrock's version suffix and regional profile prefix, a fine-tune's own part.
_BEDROCK_VERSION = re.compile(r"-v\d+:\d+$")
_BEDROCK_REGION = re.compile(r"^(?:us|us-gov|eu|apac|au|jp|ca)\.(?=anthropic\.)")
_FINE_TUNE = re.compile(r"^(ft:[^:]+):.*$")
# Step 3: one trailing snapshot suffix; OpenAI's four-digit snapshots are models of their own.
_SNAPSHOT_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-\d{2}-\d{4}|-latest|-\d{3}|-0)$")

# A rate the price does not have: a call that needs it is unpriced. One object, so that equal
# tables compare equal (NaN is not equal to itself, but a tuple compares items by identity first).
_MISSING = float("nan")

SERVICE_TIERS = ("batch", "flex", "priority")


class Rates(NamedTuple):
    """USD per million tokens of each kind (web searches: per thousand); _MISSING where not given."""

    input: float
    output: float
    cached_input: float
    cache_write: float
    cache_write_1h: float = _MISSING
    input_audio: float = _MISSING
    output_audio: float = _MISSING
    web_search_per_1k: float = _MISSING


class Tiered(NamedTuple):
    """Base rates and long-context tiers, (above_input_tokens, rates) ascending."""

    base: Rates
    tiers: Tuple[Tuple[int, Rates], ...] = ()


class Price(NamedTuple):
    """A model's standard rates and those of the other service tiers it has."""

    base: Rates
    tiers: Tuple[Tuple[int, Rates], ...] = ()
    service_tiers: Tuple[Tuple[str, Tiered], ...] = ()


class ProviderPrices(NamedTuple):
    """One provider's prices by model key, and its aliases (other name to key)."""

    prices: Dict[str, Price]
    aliases: Dict[str, str]


PriceTable = Dict[str, ProviderPrices]
EMPTY = ProviderPrices({}, {})


def table_path() -> Optional[Path]:
    for path in (_PACKAGED_TABLE, _REPO_TABLE):
        if path.is_file():
            return path
    return None


def load_table(path: Optional[Path]) -> PriceTable:
    if path is None:
        logger.warning("calltrace: price table not found; every call will cost 0")
        return {}
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("schema") != SCHEMA:
        raise ValueError(f"{path}: price table schema {document.get('schema')!r}, this SDK reads {SCHEMA}")
    aliases = document.get("aliases") or {}
    return {
        provider: ProviderPrices(_prices(models), dict(aliases.get(provider) or {}))
        for provider, models in document["models"].items()
    }


def _prices(models: Mapping[str, Mapping[str, object]]) -> Dict[str, Price]:
    return {name.strip().lower(): _price(f"{name}", p) for name, p in models.items()}


def _price(name: str, entry: Mapping[str, object]) -> Price:
    base = _tiered(name, entry)
    service_tiers = []
    for tier_name, rates in sorted((entry.get("service_tiers") or {}).items()):
        service_tiers.append((tier_name, _tiered(f"{name} ({tier_name})", rates)))
    return Price(base.base, base.tiers, tuple(service_tiers))


def _tiered(name: str, entry: Mapping[str, object]) -> Tiered:
    tiers = []
    for tier in entry.get("tiers") or ():
        above = tier.get("above_input_tokens")
        if not isinstance(above, int) or isinstance(above, bool) or above <= 0:
            raise ValueError(f"calltrace: a price tier for {name} needs a positive integer above_input_tokens")
        tiers.append((above, _rates(name, tier)))
    return Tiered(_rates(name, entry), tuple(sorted(tiers, key=lambda t: t[0])))


def _rates(name: str, entry: Mapping[str, object]) -> Rates:
    def rate(field: str, default: Optional[float] = None) -> float:
        value = entry.get(field, default)
        if value is _MISSING:
            return _MISSING
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < float("inf")):
            raise ValueError(f"calltrace: price for {name} needs a finite, non-negative {field} (USD per million tokens)")
        # float() now: the cost must be computed in doubles, as the TypeScript SDK
        # does, to be bit-identical (an int price would take Python's exact path).
        return float(value)

    base = rate("input")
    return Rates(
        base,
        rate("output"),
        rate("cached_input", base),
        rate("cache_write", base),
        rate("cache_write_1h", _MISSING),
        rate("input_audio", _MISSING),
        rate("output_audio", _MISSING),
        rate("web_search_per_1k", _MISSING),
    )


def resolve(table: ProviderPrices, model: str) -> Optional[str]:
    """The key of one provider's table that a reported model name prices as, or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _FINE_TUNE.sub(r"\1", _BEDROCK_REGION.sub("", _BEDROCK_VERSION.sub("", name)))
    if not name:
        return None
    while True:
        if name in table.prices:
            return name
        if name in table.aliases:
            return table.aliases[name]
        stripped = _SNAPSHOT_SUFFIX.sub("", name, count=1)
        if stripped == name:
            return None
        name = stripped


class Usage(NamedTuple):
    """A call's counts: cached and written input are parts of tokens_in, 1-hour writes part of the
    writes, audio input part of the uncached input, audio output part of tokens_out."""

    tokens_in: int
    tokens_out: int
    tokens_cached_in: int = 0
    tokens_cache_write: int = 0
    tokens_cache_write_1h: int = 0
    tokens_audio_in: int = 0
    tokens_audio_out: int = 0
    web_search_requests: int = 0
    service_tier: Optional[str] = None


def _part(count: int, rate: float) -> float:
    """A count at a rate; a count of 0 costs 0 even where the rate is missing."""
    return 0 if count == 0 else count * rate


def cost_of(price: Price, usage: Usage) -> Optional[float]:
    """The documented formula and operation order (sdk/pricing/README.md); None when the price
    lacks a rate the call needs."""
    tiered: Optional[Tiered] = Tiered(price.base, price.tiers)
    if usage.service_tier not in (None, "standard"):
        tiered = dict(price.service_tiers).get(usage.service_tier)
        if tiered is None:
            return None
    rates = tiered.base
    for above, tier in tiered.tiers:
        if usage.tokens_in > above:
            rates = tier
    cached = usage.tokens_cached_in
    written = usage.tokens_cache_write
    written_1h = min(usage.tokens_cache_write_1h, written)
    uncached = max(0, usage.tokens_in - cached - written)
    audio_in = min(usage.tokens_audio_in, uncached)
    audio_out = min(usage.tokens_audio_out, usage.tokens_out)
    total = (
        _part(uncached - audio_in, rates.input)
        + _part(cached, rates.cached_input)
        + _part(written - written_1h, rates.cache_write)
        + _part(written_1h, rates.cache_write_1h)
        + _part(audio_in, rates.input_audio)
        + _part(usage.tokens_out - audio_out, rates.output)
        + _part(audio_out, rates.output_audio)
    ) / 1e6 + _part(usage.web_search_requests, rates.web_search_per_1k) / 1000
    return None if math.isnan(total) else total


class Pricing:
    """The shared table with the user's overrides on top; answers cost questions fast."""

    def __init__(self, table: PriceTable, overrides: Optional[Mapping[str, Mapping[str, Mapping[str, object]]]]) -> None:
        self._table: PriceTable = {p: ProviderPrices(dict(t.prices), dict(t.aliases)) for p, t in table.items()}
        for provider, models in (overrides or {}).items():
            added = _prices(models)
            current = self._table.setdefault(provider, ProviderPrices({}, {}))
            current.prices.update(added)
            # An override under an alias's name is a model of its own, so the alias gives way.
            for name in added:
                current.aliases.pop(name, None)
        # Model names seen in traffic are few; remember how each one resolved.
        self._resolved: Dict[Tuple[str, str], Optional[Price]] = {}
        self._warned = set()

    def price(self, provider: str, model: str) -> Optional[Price]:
        key = (provider, model)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        table = self._table.get(provider, EMPTY)
        base = resolve(table, model)
        found = table.prices[base] if base is not None else None
        if len(self._resolved) < 4096:
            self._resolved[key] = found
        return found

    def cost(self, provider: str, model: str, usage: Usage) -> float:
        """USD for one call. A call that used nothing costs 0; a model or a rate the table does not
        know costs 0, with one warning per model."""
        if usage.tokens_in == 0 and usage.tokens_out == 0 and usage.web_search_requests == 0:
            return 0.0
        price = self.price(provider, model)
        cost = None if price is None else cost_of(price, usage)
        if cost is None:
            if (provider, model) not in self._warned and len(self._warned) < 4096:
                self._warned.add((provider, model))
                logger.warning(
                    "calltrace: no price for %s model %r%s; its calls are traced with cost_usd 0 "
                    "(add it with calltrace.init(prices=...))",
                    provider,
                    model,
                    "" if price is None else " in this billing mode",
                )
            return 0.0
        return cost
