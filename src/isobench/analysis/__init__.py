"""The statistics, pure functions over numbers: per-cell tests and
intervals (`stats`), a cell between two runs (`tworuns`), verdicts and the BH correction over a family
(`verdicts`), warnings (`anomalies`), the order of a round's samples
(`order`), adaptive repetitions, the time
budget's looks (`budget`), steps in a series (`changepoints`) and the noise
pilot's statistics (`pilotstats`).

Imports only `core` (and numpy/scipy); nothing here touches the host, the
store or a file."""
