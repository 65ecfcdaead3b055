"""A rich progress bar for long studies; notes go above it. Every line
and label passes the terminal sink first (core.sink): a note carries a
failing command's stderr, a label a study's names, and neither may move
the cursor or write the clipboard."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from isobench.core import sink


class RichProgress:
    def __init__(self, console: Console, bar: bool = True):
        self.console = console
        self.bar = bar
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None
        self._done = 0
        self._total = 0

    def __enter__(self) -> RichProgress:
        if self.bar:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar:
            self._progress.stop()

    # The count is the runner's plan; a plan that falls short (a resumed run,
    # a duet measured again) grows to what was done, so the counter never
    # reads "[1/-47]" or "[3/2]" (issue 55).
    def start(self, total: int) -> None:
        self._total = max(total, 0)
        if not self.bar:
            return
        self._task = self._progress.add_task("samples", total=self._total)

    def extend(self, more: int) -> None:
        self._grow(self._total + more)

    def step(self, label: str) -> None:
        self._grow(self._done + 1)  # at least the sample this step starts
        if not self.bar:  # logs (CI, pipes): one line per sample instead of a bar
            self.console.print(
                f"[{self._done + 1}/{self._total}] {sink.terminal(label)}", highlight=False, markup=False
            )
        if self._task is not None:
            self._progress.update(self._task, description=sink.markup(label))  # the column reads markup

    def advance(self) -> None:
        self._done += 1
        self._grow(self._done)
        if self._task is not None:
            self._progress.advance(self._task)

    def _grow(self, total: int) -> None:
        if total > self._total:
            self._total = total
            if self._task is not None:
                self._progress.update(self._task, total=total)

    def note(self, message: str) -> None:
        # soft_wrap: a note is one line however long, so logs and tools read it whole
        (self._progress.console if self.bar else self.console).print(
            sink.terminal(message), highlight=False, markup=False, soft_wrap=True
        )
