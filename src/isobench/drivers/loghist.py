"""Log-bucketed latency histograms (pure, standard library only, so the
client-host drivers and the workloads that parse their output share it).

Bucket k holds latencies in [B**k, B**(k+1)) microseconds, B = 10**(1/40):
40 buckets per decade, so a quantile read back is within ~6% of the true
value whatever its size (1 us .. hours), and histograms of instances or
runs add bucket by bucket.
"""

from __future__ import annotations

import math

PER_DECADE = 40
_LOG_B = math.log(10) / PER_DECADE


def bucket(latency_s: float) -> int:
    us = max(latency_s * 1e6, 1.0)
    return int(math.log(us) / _LOG_B)


def bucket_mid_s(k: int) -> float:
    """The geometric middle of bucket k, in seconds."""
    return math.exp((k + 0.5) * _LOG_B) / 1e6


def add(hist: dict[int, int], latency_s: float) -> None:
    k = bucket(latency_s)
    hist[k] = hist.get(k, 0) + 1


def merge(hists) -> dict[int, int]:
    out: dict[int, int] = {}
    for h in hists:
        for k, n in h.items():
            out[int(k)] = out.get(int(k), 0) + int(n)
    return out


def count(hist: dict[int, int]) -> int:
    return sum(hist.values())


def quantile(hist: dict[int, int], q: float) -> float:
    """The q-quantile (0 < q <= 1) in seconds, nan for an empty histogram.

    Interpolated (on the log scale) by the rank's place among the bucket's
    counts, as Prometheus' histogram_quantile: a bucket's middle for every
    rank in it would quantise quantiles to 6% steps, and two runs one step
    apart in every round would show a change with no spread at all."""
    total = count(hist)
    if total == 0:
        return float("nan")
    rank = max(1, math.ceil(q * total))
    seen = 0
    for k in sorted(hist):
        n = hist[k]
        if seen + n >= rank:
            return math.exp((k + (rank - seen - 0.5) / n) * _LOG_B) / 1e6
        seen += n
    return bucket_mid_s(max(hist))


def to_json(hist: dict[int, int]) -> dict[str, int]:
    return {str(k): n for k, n in sorted(hist.items())}


def from_json(doc: dict) -> dict[int, int]:
    try:
        return {int(k): int(n) for k, n in doc.items()}
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a histogram: {exc}") from exc
