"""Which stored runs explain which: an explain run's host fact ``explain``
(store/shapes.Explain) names the run it explains; `runs`, `report` and
`history` show the link beside the runs."""

from __future__ import annotations

from isobench.store.db import Store
from isobench.store.shapes import explains_of


def explain_links(store: Store) -> dict[str, str]:
    """Each explain run's id -> the id of the run it explains."""
    rows = store.db.execute("SELECT run_id, host_facts FROM runs WHERE host_facts LIKE '%\"explain\"%'")
    links = {run_id: explains_of(text) for run_id, text in rows}
    return {run_id: of for run_id, of in links.items() if of is not None}
