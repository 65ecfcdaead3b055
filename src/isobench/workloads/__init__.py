"""The workloads: one module each, registered by name when this package is
imported (registry.py). ``WORKLOADS`` (name -> class) and ``get`` are the
package's face."""

from __future__ import annotations

from isobench.workloads.registry import WORKLOADS, claiming_fields, discover, get, table_kind

discover(__path__, f"{__name__}.")

__all__ = ["WORKLOADS", "claiming_fields", "get", "table_kind"]
