"""The results model: a run as read back from the store (RunData), the
per-cell analysis, Table I's cells and their verdicts (`table`), how an
adaptive or budgeted run stopped (`stopping`), the run's and host's facts as
renderers print them (`runfacts`). Storage, compare,
export and every renderer import it; it imports none of them."""
