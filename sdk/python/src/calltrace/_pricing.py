"""Cost of a call from the shared price table (sdk/pricing/models.json).

The resolution rule and the cost formula are the ones in sdk/pricing/README.md,
implemented to give the same answer as the TypeScript SDK (and the service) for
every name and count; sdk/pricing/vectors.json checks both.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Dict, Mapping, NamedTuple, Optional, Tuple

logger = logging.getLogger("calltrace")

SCHEMA = 2

# Where the table is: inside an installed package (put there by hatch_build.py),
# or, for an editable or in-repo install, the repository's one copy.
_PACKAGED_TABLE = Path(__file__).with_name("models.json")
_REPO_TABLE = Path(__file__).resolve().parents[3] / "pricing" / "models.json"

_SNAPSHOT_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3,4}|-0)$")


class Rates(NamedTuple):
    """USD per million tokens of each kind."""

    input: float
    output: float
    cached_input: float
    cache_write: float


class Price(NamedTuple):
    """A model's base rates and its long-context tiers, (above_input_tokens, rates) ascending."""

    base: Rates
    tiers: Tuple[Tuple[int, Rates], ...] = ()


PriceTable = Dict[str, Dict[str, Price]]


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
    return {provider: _prices(models) for provider, models in document["models"].items()}


def _prices(models: Mapping[str, Mapping[str, object]]) -> Dict[str, Price]:
    return {name.strip().lower(): _price(f"{name}", p) for name, p in models.items()}


def _price(name: str, entry: Mapping[str, object]) -> Price:
    tiers = []
    for tier in entry.get("tiers") or ():
        above = tier.get("above_input_tokens")
        if not isinstance(above, int) or isinstance(above, bool) or above <= 0:
            raise ValueError(f"calltrace: a price tier for {name} needs a positive integer above_input_tokens")
        tiers.append((above, _rates(name, tier)))
    return Price(_rates(name, entry), tuple(sorted(tiers, key=lambda t: t[0])))


def _rates(name: str, entry: Mapping[str, object]) -> Rates:
    def rate(field: str, default: Optional[float] = None) -> float:
        value = entry.get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < float("inf")):
            raise ValueError(f"calltrace: price for {name} needs a finite, non-negative {field} (USD per million tokens)")
        # float() now: the cost must be computed in doubles, as the TypeScript SDK
        # does, to be bit-identical (an int price would take Python's exact path).
        return float(value)

    base = rate("input")
    return Rates(base, rate("output"), rate("cached_input", base), rate("cache_write", base))


def resolve(keys: Mapping[str, object], model: str) -> Optional[str]:
    """The key of `keys` (one provider's table) that a reported model name prices as, or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if not name:
        return None
    if name in keys:
        return name
    while True:
        stripped = _SNAPSHOT_SUFFIX.sub("", name, count=1)
        if stripped == name:
            return None
        name = stripped
        if name in keys:
            return name


def cost_of(price: Price, tokens_in: int, tokens_out: int, tokens_cached_in: int = 0, tokens_cache_write: int = 0) -> float:
    """The documented formula and operation order; see sdk/pricing/README.md."""
    rates = price.base
    for above, tier in price.tiers:
        if tokens_in > above:
            rates = tier
    uncached = max(0, tokens_in - tokens_cached_in - tokens_cache_write)
    return (
        uncached * rates.input
        + tokens_cached_in * rates.cached_input
        + tokens_cache_write * rates.cache_write
        + tokens_out * rates.output
    ) / 1e6


class Pricing:
    """The shared table with the user's overrides on top; answers cost questions fast."""

    def __init__(self, table: PriceTable, overrides: Optional[Mapping[str, Mapping[str, Mapping[str, object]]]]) -> None:
        self._prices: PriceTable = {provider: dict(models) for provider, models in table.items()}
        for provider, models in (overrides or {}).items():
            self._prices.setdefault(provider, {}).update(_prices(models))
        # Model names seen in traffic are few; remember how each one resolved.
        self._resolved: Dict[Tuple[str, str], Optional[Price]] = {}
        self._warned = set()

    def price(self, provider: str, model: str) -> Optional[Price]:
        key = (provider, model)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        prices = self._prices.get(provider, {})
        base = resolve(prices, model)
        found = prices[base] if base is not None else None
        if len(self._resolved) < 4096:
            self._resolved[key] = found
        return found

    def cost(
        self,
        provider: str,
        model: str,
        tokens_in: int,
        tokens_out: int,
        tokens_cached_in: int = 0,
        tokens_cache_write: int = 0,
    ) -> float:
        """USD for one call; cached input and cache writes are parts of tokens_in. Unknown models cost 0."""
        price = self.price(provider, model)
        if price is None:
            if (provider, model) not in self._warned and len(self._warned) < 4096:
                self._warned.add((provider, model))
                logger.warning(
                    "calltrace: no price for %s model %r; its calls are traced with cost_usd 0 "
                    "(add it with calltrace.init(prices=...))",
                    provider,
                    model,
                )
            return 0.0
        return cost_of(price, tokens_in, tokens_out, tokens_cached_in, tokens_cache_write)
