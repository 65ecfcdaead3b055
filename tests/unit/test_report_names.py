"""report/ names no environment kind and no workload: what it shows of them
comes from roles, facts and the run (issue: the report's seam). Comments and
docstrings may name them; code and templates may not."""

import ast
import io
import re
import tokenize
from pathlib import Path

from isobench.envs.kinds import kinds, presets
from isobench.workloads import WORKLOADS

REPORT = Path(__file__).resolve().parents[2] / "src" / "isobench" / "report"
# words only a kind uses (tools and runtimes), beside the kinds', presets' and workloads' names
KIND_WORDS = {"qemu", "kvm", "tcg", "runc", "crun", "runsc", "gvisor", "dockerd"}


def _names() -> set[str]:
    names = set(KIND_WORDS)
    names.update(kinds())
    names.update(presets())
    names.update(WORKLOADS)
    return {n.lower() for n in names}


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Identifiers and string literals outside docstrings and comments."""
    src = path.read_text()
    docs = set()
    for node in ast.walk(ast.parse(src)):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    return [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(io.StringIO(src).readline)
        if t.type in (tokenize.STRING, tokenize.NAME, getattr(tokenize, "FSTRING_MIDDLE", -1))
        and t.start[0] not in docs
    ]


def test_report_code_names_no_kind_and_no_workload():
    names = _names()
    # "startup" is also the role of a start-request-to-ready time (metric.STARTUP)
    words = re.compile(r"\b(" + "|".join(sorted(re.escape(n) for n in names - {"startup"})) + r")\b", re.I)
    found = []
    for path in sorted(REPORT.rglob("*.py")):
        for line, text in _code_strings(path):
            if text.strip("'\"fr").lower() in names - {"startup"} or words.search(text):
                found.append(f"{path.relative_to(REPORT)}:{line}: {text[:60]}")
    for path in sorted(REPORT.rglob("*.j2")):
        body = re.sub(r"\{#.*?#\}", "", path.read_text(), flags=re.S)
        found += [f"{path.relative_to(REPORT)}: {m.group(0)}" for m in words.finditer(body)]
    assert not found, "\n".join(found)
