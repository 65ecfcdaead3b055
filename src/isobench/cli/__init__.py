"""The command line: one module per command group, one error frame
(`entry`: one line, traceback to a log, `--debug`), the shared console and
store opening (`common`), and starting a study for `run` and `calibrate`
(`execution`). Parsing and printing only; the work is done below.

Imports anything below it; nothing imports `cli`."""
