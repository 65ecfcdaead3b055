"""The results model: a run as read back from the store (RunData), the
per-cell analysis, Table I's cells and their verdicts. Storage, compare,
export and every renderer import it; it imports none of them."""
