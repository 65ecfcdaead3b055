"""Issue 52: does each of the duet's equalisers move a result on its own?
Native against native as duets (A/A), where the second side lacks exactly
one of them, named by the environment's suffix:

    native-b        nothing taken out (the A/A itself)
    native-nocg     no cgroups of its own: pinned by taskset, moved by a /proc walk
    native-nopad    no pad: argv and environment at their own size, not 8192 bytes
    native-nogate   the old way: no gate (its command started at the release, in
                    the harness's environment, no cgroups, fillers by exec)

    .venv/bin/python benchmarks/factor_aa.py run STUDY.toml [isobench run options]

The study names them as native environments ([environments.native-nocg]
kind = "native"). The figures: benchmarks/runs_apart.py over the run.
"""

from __future__ import annotations

import sys
import threading

from isobench.core import gate as gate_mod
from isobench.core import gatedproc
from isobench.envs import native
from isobench.envs.kinds import EnvKind

_side = threading.local()  # the pad of the gated command this duet side starts


class NoCgroup(native.NativeEnvironment):
    def _gated(self, argv, timeout, cwd, gate):
        gate.standing = "the harness's cgroups (factor run)"
        return gatedproc.run_gated(argv, timeout, cwd, gate, [], pin=self.cpu, live=self._live)


class NoPad(native.NativeEnvironment):
    def _gated(self, argv, timeout, cwd, gate):
        _side.pad = 0
        try:
            return super()._gated(argv, timeout, cwd, gate)
        finally:
            _side.pad = None


class NoGate(native.NativeEnvironment):
    def gate_problem(self) -> str:
        return "factor run: started at the release, the old way"


VARIANTS = {"-nocg": NoCgroup, "-nopad": NoPad, "-nogate": NoGate}
_gate_argv = gate_mod.gate_argv


def gate_argv(argv, fill, *args, **kw):
    full = _gate_argv(argv, fill, *args, **kw)
    pad = getattr(_side, "pad", None)
    if pad is not None:
        full[full.index(str(gate_mod.PAD_TO))] = str(pad)
    return full


def make(self: EnvKind, name, spec, *, run_id, host, image, index):
    cls = next((c for suffix, c in VARIANTS.items() if name.endswith(suffix)), native.NativeEnvironment)
    return cls(name=name, spec=spec, run_id=run_id, cpu=native.placement(spec.pin, index))


def main() -> None:
    gatedproc.gate_argv = gate_argv
    native.NativeKind.make = make
    from isobench.cli.entry import main as isobench

    isobench(sys.argv[1:])


if __name__ == "__main__":
    main()
