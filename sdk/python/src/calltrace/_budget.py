"""enforce_budget: refuse a provider call once a spend budget that counts it is used up.

The budget status (GET /v1/budget beside the trace endpoint, the body a
`BudgetStatus` of proto/calltrace/v1/alert.proto in protobuf JSON) is kept in
memory and refreshed by a daemon thread, so checking a call reads memory only
and adds no request to it. It fails open: until a first status arrives, and
whenever a refresh fails (service unreachable, 5xx, timeout, 401/403, a body
it cannot read), no call is refused; each kind of failure is logged once.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any, Dict, List, Optional

from ._attributes import Attributes

logger = logging.getLogger("calltrace")

_CALENDAR_WINDOWS = ("ALERT_WINDOW_KIND_DAY", "ALERT_WINDOW_KIND_WEEK", "ALERT_WINDOW_KIND_MONTH")
# No proxy: like the traces, the status goes straight to the service.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BudgetExceeded(Exception):
    """Raised instead of making a provider call that an exceeded spend budget counts.

    rule_id, name: the spend rule. scope: {"kind": "project" | "key" | "user" | "tag" |
    "model" | "environment" | "metadata", "value": ..., "metadata_key": ...}.
    spend_usd, budget_usd: spend in the budget's window as last measured, and the budget.
    """

    def __init__(self, budget: "Budget") -> None:
        self.rule_id = budget.rule_id
        self.name = budget.name
        self.scope = {"kind": budget.kind, "value": budget.value, "metadata_key": budget.metadata_key}
        self.spend_usd = budget.spend_usd
        self.budget_usd = budget.budget_usd
        if budget.kind == "project":
            what = "the project"
        else:
            what = ("metadata." + budget.metadata_key if budget.kind == "metadata" else budget.kind) + f" {budget.value!r}"
        super().__init__(
            f"calltrace: budget {budget.name or budget.rule_id!r} for {what} is exceeded "
            f"(${budget.spend_usd:g} of ${budget.budget_usd:g}); the provider was not called"
        )


class Budget:
    __slots__ = ("rule_id", "name", "kind", "value", "metadata_key", "budget_usd", "spend_usd", "exceeded", "ends_at")

    def __init__(self, rule_id: str, name: str, kind: str, value: str, metadata_key: str,
                 budget_usd: float, spend_usd: float, exceeded: bool, ends_at: Optional[float]) -> None:
        self.rule_id = rule_id
        self.name = name
        self.kind = kind  # the scope kind, lower case, without ALERT_SCOPE_KIND_
        self.value = value
        self.metadata_key = metadata_key
        self.budget_usd = budget_usd
        self.spend_usd = spend_usd
        self.exceeded = exceeded
        # time.time() past which a calendar window is over; None for a rolling one.
        self.ends_at = ends_at


def parse_status(body: Any) -> List[Budget]:
    """The budgets of a BudgetStatus body, which leaves default values out; ValueError for another shape."""
    if not isinstance(body, dict):
        raise ValueError("not a BudgetStatus: expected an object")
    entries = _field(body, "budgets", [])
    if not isinstance(entries, list):
        raise ValueError("not a BudgetStatus: budgets is not an array")
    budgets = []
    for index, entry in enumerate(entries):
        rule_id = _field(entry, "rule_id") if isinstance(entry, dict) else None
        if not isinstance(rule_id, str):
            raise ValueError(f"not a BudgetStatus: budgets[{index}] has no rule id")
        scope = _field(entry, "scope", {})
        scope = scope if isinstance(scope, dict) else {}
        window = _field(entry, "window", {})
        calendar = isinstance(window, dict) and window.get("kind") in _CALENDAR_WINDOWS
        budgets.append(Budget(
            rule_id,
            _text(_field(entry, "name")),
            re.sub(r"^ALERT_SCOPE_KIND_", "", _text(scope.get("kind")) or "ALERT_SCOPE_KIND_UNSPECIFIED").lower(),
            _text(scope.get("value")),
            _text(_field(scope, "metadata_key")),
            _usd(_field(entry, "budget_usd")),
            _usd(_field(entry, "spend_usd")),
            _field(entry, "exceeded", False) is True,
            _timestamp(_field(entry, "window_end")) if calendar else None,
        ))
    return budgets


def exceeded_budget(
    budgets: List[Budget], model: Any, attributes: Attributes, environment: Optional[str], now: float
) -> Optional[Budget]:
    """The first exceeded budget that counts a call with this model and these attributes (init's, the scope's
    and the call's, merged), or None. The service lists only the budgets that can count this key's calls,
    so a key-scoped one it lists is this key's."""
    for budget in budgets:
        if not budget.exceeded or (budget.ends_at is not None and now >= budget.ends_at):
            continue
        if _counts(budget, model, attributes, environment):
            return budget
    return None


def _counts(budget: Budget, model: Any, attributes: Attributes, environment: Optional[str]) -> bool:
    kind, value = budget.kind, budget.value
    if kind in ("project", "key"):
        return True
    if kind == "user":
        return attributes.user_id == value
    if kind == "tag":
        return value in attributes.tags
    if kind == "model":
        return model == value
    if kind == "environment":
        return environment == value
    if kind == "metadata":
        return attributes.metadata.get(budget.metadata_key) == value
    return False  # a scope this SDK does not know: never refuse on a guess


class BudgetGuard:
    """Keeps the budget status fresh from a daemon thread; check() reads memory only."""

    def __init__(self, url: str, api_key: str, refresh: float, timeout: float, environment: Optional[str]) -> None:
        self.url = url
        self.refresh = refresh
        self.timeout = timeout
        self.environment = environment
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self._budgets: List[Budget] = []
        self._warned: set = set()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="calltrace-budget", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def after_fork_in_child(self) -> None:
        """The refreshing thread does not survive a fork: the child starts its own."""
        if not self._stop.is_set():
            self.start()

    def check(self, model: Any, attributes: Attributes) -> None:
        """Raises BudgetExceeded if an exceeded budget counts this call."""
        budgets = self._budgets  # one read: the thread replaces the list whole
        if not budgets:
            return
        budget = exceeded_budget(budgets, model, attributes, self.environment, time.time())
        if budget is not None:
            raise BudgetExceeded(budget)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._refresh()
            self._stop.wait(self.refresh)

    def _refresh(self) -> None:
        try:
            self._budgets = self._fetch()
            self._warned.clear()  # answering again: a later failure is news
        except _Failure as failure:
            self._budgets = []  # fail open
            if failure.kind not in self._warned:
                self._warned.add(failure.kind)
                logger.warning("calltrace: enforce_budget: %s; calls are not refused until it answers", failure)
        except Exception:  # never let the thread die: the next refresh may work
            self._budgets = []
            logger.debug("calltrace: enforce_budget refresh failed", exc_info=True)

    def _fetch(self) -> List[Budget]:
        request = urllib.request.Request(self.url, headers=self._headers)
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            error.close()
            if error.code in (401, 403):
                raise _Failure("auth", f"the service refused the API key for /v1/budget ({error.code})") from None
            raise _Failure(f"status {error.code}", f"{self.url} answered {error.code}") from None
        except (OSError, ValueError) as error:  # URLError, timeouts, resets, a malformed answer
            raise _Failure("unreachable", f"could not read budgets from {self.url} ({_reason(error)})") from None
        try:
            return parse_status(json.loads(text))
        except ValueError as error:
            raise _Failure("malformed", f"unreadable budget status from {self.url}: {error}") from None


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def budget_url(trace_endpoint: str) -> str:
    """GET /v1/budget beside the trace endpoint (…/v1/traces)."""
    base = trace_endpoint.split("?", 1)[0].rstrip("/")
    if base.endswith("/traces"):
        return base[: -len("traces")] + "budget"
    scheme, _, rest = base.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}/v1/budget"


def _field(holder: Dict[str, Any], snake: str, default: Any = None) -> Any:
    """A field by its protobuf JSON name (lowerCamelCase) or its proto name."""
    head, *rest = snake.split("_")
    camel = head + "".join(part.title() for part in rest)
    return holder.get(camel, holder.get(snake, default))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _usd(value: Any) -> float:
    """protobuf JSON writes doubles as numbers, or as strings for "Infinity" and "NaN"."""
    if isinstance(value, bool):
        return 0.0
    try:
        amount = float(value) if isinstance(value, (int, float, str)) else 0.0
    except ValueError:
        return 0.0
    return amount if not math.isnan(amount) else 0.0


def _timestamp(value: Any) -> Optional[float]:
    if not isinstance(value, str):
        return None
    try:
        # RFC 3339 as protobuf JSON writes it; fromisoformat takes "Z" only from Python 3.11.
        # Python 3.9 reads 3 or 6 fractional digits only.
        text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "00000")[:6], value.replace("Z", "+00:00"))
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or error) or type(error).__name__
