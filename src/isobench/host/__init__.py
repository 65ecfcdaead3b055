"""The host as isobench sees it: facts (cores, memory, THP, the
hypervisor flag), /proc and cgroup counters around every sample, stepped
stress-ng noise neighbours, the package lists of the workload tools and the
Docker daemon configuration.

Imports `core` only; `packages` and `daemonconf` run as stdlib-only scripts
before the virtual environment exists, so they import nothing at all."""
