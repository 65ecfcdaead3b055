"""JUnit XML for CI systems: one test case per checked cell, failed where the
gate fails. Pure text building plus one bounded write; callers (compare,
history) decide what a case and a failure are."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from isobench.core.errors import IsobenchError
from isobench.core.ids import printable


@dataclass(frozen=True)
class Case:
    name: str  # e.g. "compression default throughput_mbs on docker-nat"
    classname: str  # e.g. "isobench.compare.quick"
    failure: str | None = None  # the gate's one-line reason; None = passed
    skipped: str | None = None  # e.g. "inconclusive at this n"
    output: str = ""  # the cell's line as printed


def _text(value: str) -> str:
    # XML 1.0 cannot hold most control characters: show them escaped
    return printable(value)


def junit_xml(suite: str, cases: list[Case]) -> str:
    root = ET.Element("testsuites")
    failures = sum(1 for c in cases if c.failure is not None)
    skipped = sum(1 for c in cases if c.failure is None and c.skipped is not None)
    ts = ET.SubElement(
        root,
        "testsuite",
        name=_text(suite),
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
    )
    for c in cases:
        tc = ET.SubElement(ts, "testcase", name=_text(c.name), classname=_text(c.classname))
        if c.failure is not None:
            ET.SubElement(tc, "failure", message=_text(c.failure)).text = _text(c.failure)
        elif c.skipped is not None:
            ET.SubElement(tc, "skipped", message=_text(c.skipped))
        if c.output:
            ET.SubElement(tc, "system-out").text = _text(c.output)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, suite: str, cases: list[Case]) -> None:
    try:
        Path(path).write_text(junit_xml(suite, cases), encoding="utf-8")
    except OSError as exc:
        raise IsobenchError(
            f"--junit {printable(str(path))}: cannot write: {exc.strerror}; give a path in an "
            "existing, writable directory"
        ) from None
