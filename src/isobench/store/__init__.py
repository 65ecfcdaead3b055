"""Keeping results: the SQLite store (`db`: every sample committed as
measured; its tables in `schema`; a run read back into the results model in
`readback`), a whole run moved between stores exactly (`transfer`), CSV and
JSON export, a store opened only to be read, also on a read-only filesystem
(`readonly`), re-parsing stored raw outputs with today's parsers (`reparse`)
and which parser made a run's values (`parser_versions`).

Imports down: study, workloads, host, results, core."""
