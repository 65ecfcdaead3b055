"""The ground every other package stands on: error types, the `Metric`
type, identifiers checked before they become paths, the bounded argv runner
(`proc`), die-with-parent, scratch paths, the run lock, who owns a
leftover and whether it still runs (`owner`), strict pydantic
models, bounded reads, the one Docker client factory, how numbers are
printed (`numbers`) and a planted slowdown's arithmetic (`plants`).

Imports nothing of isobench outside `core`."""
