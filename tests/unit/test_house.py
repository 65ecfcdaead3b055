"""The structure of the package: imports form no circle (so every module
sits on a floor above everything it imports, and imports only go down), and
no module imports another module's private (_underscore) names.

Read from the source with ast, every import statement counted, including
imports inside functions: a deferred import is still a dependency."""

from __future__ import annotations

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
PACKAGE = "isobench"


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in (SRC / PACKAGE).rglob("*.py")}


def resolve(target: str, known: dict[str, pathlib.Path]) -> str | None:
    """The module a dotted name lives in (a name imported from a package
    may be a submodule or an attribute of the package)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def imports(name: str, path: pathlib.Path, known: dict[str, pathlib.Path]):
    """(imported module, imported names) for each isobench import of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield resolve(alias.name, known), []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from pkg import submodule`
                    yield sub, []
                else:
                    yield resolve(target, known), [alias.name]


def graph() -> tuple[dict[str, set[str]], list[str]]:
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    private: list[str] = []
    for name, path in known.items():
        for target, names in imports(name, path, known):
            if target is None or target == name:
                continue
            edges[name].add(target)
            private += [f"{name} imports {target}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_no_import_circles():
    edges, _ = graph()
    # A package's __init__ importing its own submodules is its face, not a
    # circle: leave those arrows out, as a submodule importing its package
    # means the package's other submodules.
    trimmed = {m: {t for t in ts if not is_ancestor(m, t)} for m, ts in edges.items()}
    assert cycles(trimmed) == []


def test_no_private_names_across_modules():
    _, private = graph()
    assert private == []


def test_the_checks_can_fail():
    # The detectors themselves: a planted circle and a planted private import.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    known = {"isobench.x": pathlib.Path("x.py"), "isobench.y": pathlib.Path("y.py")}
    assert resolve("isobench.y.helper", known) == "isobench.y"


LIMIT = 450  # lines per module: past it a second concern has usually grown inside
# Over the limit while being split; empty since the runner and the command
# line were (issue 37), and nothing joins it.
TOO_LARGE_FOR_NOW: frozenset[str] = frozenset()


def too_large(sizes: dict[str, int], limit: int = LIMIT, allowed: frozenset[str] = TOO_LARGE_FOR_NOW) -> dict[str, int]:
    return {name: n for name, n in sizes.items() if n > limit and name not in allowed}


def test_no_room_is_too_large():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    big = too_large(sizes)
    assert big == {}, f"modules over {LIMIT} lines: {big}"


def test_the_size_check_can_fail():
    assert too_large(
        {"isobench.a": LIMIT + 1, "isobench.b": LIMIT, "isobench.c": 900}, allowed=frozenset({"isobench.c"})
    ) == {"isobench.a": LIMIT + 1}


def package_of(module: str) -> str:
    """The room a module lives in at the top of the tree: its first-level
    package (`isobench.run.runner` -> `isobench.run`), or itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, ts in edges.items():
        src = package_of(m)
        out.setdefault(src, set())
        out[src] |= {package_of(t) for t in ts if package_of(t) not in (src, PACKAGE)}
    return out


def test_no_circles_between_packages():
    # Packages are the rooms a newcomer sees: `run` importing `store` while
    # `store` imports `run` would make the floors of the tree a lie even when
    # no two modules import each other.
    edges, _ = graph()
    assert cycles(package_edges(edges)) == []


def test_the_package_check_can_fail():
    planted = {
        "isobench.a.x": {"isobench.b.y"},
        "isobench.b.y": set(),
        "isobench.b.z": {"isobench.a.w"},
        "isobench.a.w": set(),
    }
    assert cycles(package_edges(planted)) == [["isobench.a", "isobench.b"]]


def test_the_top_of_the_tree_is_packages():
    # What a newcomer sees first: packages by concern, and only the study
    # model and the package's face beside them.
    top = sorted(p.name for p in (SRC / PACKAGE).glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "study.py"]


# -- no block written twice ------------------------------------------------------------
# A block of BLOCK significant lines (blank lines, comments and imports left
# out, each line stripped) that appears twice in src/ is code to share. Short
# windows would flag idioms (a try/except that passes); under BLOCK_CHARS
# characters a window is boilerplate too.
BLOCK = 6
BLOCK_CHARS = 150


def significant(text: str) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith(("#", "import ", "from ")):
            out.append((number, s))
    return out


def repeated_blocks(texts: dict[str, str]) -> list[list[str]]:
    """Each block found more than once, as its places ("module:line")."""
    seen: dict[tuple[str, ...], list[str]] = {}
    for name, text in texts.items():
        lines = significant(text)
        for j in range(len(lines) - BLOCK + 1):
            window = tuple(s for _, s in lines[j : j + BLOCK])
            if sum(map(len, window)) >= BLOCK_CHARS:
                seen.setdefault(window, []).append(f"{name}:{lines[j][0]}")
    return [places for places in seen.values() if len(places) > 1]


def test_no_block_written_twice():
    texts = {name: path.read_text(encoding="utf-8") for name, path in modules().items()}
    assert repeated_blocks(texts) == []


def test_the_block_check_can_fail():
    block = "\n".join(f"value_{i} = compute_something_long(argument_{i}, other_argument_{i})" for i in range(BLOCK))
    found = repeated_blocks({"a": block, "b": "x = 1\n\n# a comment\n" + block.replace("\n", "\n\n"), "c": "y = 2"})
    assert found == [["a:1", "b:4"]]
