"""What to do with the service's answer to one trace: done, give up, or retry after a wait."""

from __future__ import annotations

import json
import random
from typing import Optional

from ._transport import Response

# 429 (rate limit or monthly quota) and 503 (store busy) are the contract's
# retryable answers; other 5xx come from proxies and load balancers in front
# of a self-hosted service and are just as transient. The Idempotency-Key
# makes every retry safe. 400/401/413/415 would fail the same way again.
RETRYABLE_STATUSES = frozenset([429]) | frozenset(range(500, 600))


class RetryPolicy:
    def __init__(self, max_retries: int, base_delay: float, max_delay: float) -> None:
        self.max_retries = max_retries
        self.base_delay = base_delay
        # Also the longest retry_after honoured: a longer one (the monthly
        # quota's, days away) means retrying this trace is pointless.
        self.max_delay = max_delay

    def backoff(self, attempt: int) -> float:
        """Delay before retry number `attempt` (1-based) when the service named none."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        # Jitter spreads out many processes that failed at the same moment.
        return ceiling * random.uniform(0.5, 1.0)


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUSES


def retry_after(response: Response) -> Optional[float]:
    """Seconds the service asked us to wait: body `retry_after`, else the Retry-After header."""
    try:
        value = json.loads(response.body).get("retry_after")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
    except (ValueError, AttributeError):
        pass
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            return max(0.0, float(header))
        except ValueError:
            pass  # an HTTP date; the service never sends one, so backoff decides
    return None
