"""Running a study: the matrix of rounds, cases and environments with
its teardown (`runner`), leftovers of every kind (`clean`), the gate's
calibration study (`calibration`) and the progress display.

Imports down: store, checks, study, workloads, envs, host, analysis,
results, core; never `cli`."""
