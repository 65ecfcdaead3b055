"""Load generators isobench runs on the client host (in its network
namespace) with its own interpreter: ``python -m isobench.drivers.NAME``.
Each prints one JSON document on stdout; the workload's parser reads it."""
