"""What isobench checks before and during a run: host settings that bias
results (`doctor`), an environment that died mid-run (`health`), the
study's size and the host's readiness before anything starts
(`preflight`), the host-noise pilot (`noisepilot`, its kernels and timing
loop in `pilotkernels`) and what a study can resolve from it
(`resolution`).

Imports down: study, workloads, envs, host, analysis, results, core."""
