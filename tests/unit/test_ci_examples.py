"""The pipelines in ci-examples/ (docs/ci.md) say what works: every isobench
command line in them is parsed by the real command line, and the ones that
need no host run, in the pipeline's order, on a scratch store: `validate
--strict` on the shipped study (at a quiet and at a loud host noise), `run`
with its measuring replaced by a stored run, `archive`, `import`,
`compare` (exit 0, 1 or 4 as the runs say) and `history`. A line with an option or a command that does not exist, a
malformed line, or a variable the test does not know fails the test. Each
file also passes its forge's own rules: actionlint for the GitHub workflow
(a `runner` context in a job's env: GitHub refused it before it started),
and the forges' schemas (GitLab's own CI schema) through check-jsonschema,
offline."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.store.db import Store
from isobench.study import load_study
from synthetic_runs import fake_pilot, simple_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "ci-examples"
PIPELINES = ("github-actions.yml", "gitlab-ci.yml")
OPERATOR = set("();<>|&")
# need the host (Docker, its noise, root): parsed, not run
PARSE_ONLY = {"doctor", "envs", "images", "clean", "calibrate", "try", "fleet", "setup"}

TIGHT = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0]
NOISY = [100.0, 90.0, 110.0, 95.0, 105.0]
QUIET, LOUD = (0.01, 0.02), (5.0, 5.0)  # the host's noise as `doctor` measured it (CPU, I/O)
SCENARIOS = {  # base run's and candidate's values off the baseline environment, host noise, what fails and how
    "pass": (TIGHT, TIGHT, QUIET, None, 0),
    "regression": (TIGHT, [v * 0.8 for v in TIGHT], QUIET, "compare", out.EXIT_GATE),
    "blind": (NOISY, list(reversed(NOISY)), QUIET, "compare", out.EXIT_BLIND),
    "blind-host": (TIGHT, TIGHT, LOUD, "validate", out.EXIT_BLIND),  # validate --strict stops it before it runs
}


def scripts(doc) -> list[str]:
    """The shell scripts of a GitHub Actions workflow (each step's run) or a
    GitLab CI file (each job's before_script and script, jobs by stage), in
    the order they run."""
    if "jobs" in doc:
        return [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]
    stages = [".pre", *doc.get("stages", ["build", "test", "deploy"]), ".post"]
    jobs = [j for name, j in doc.items() if isinstance(j, dict) and "script" in j and not name.startswith(".")]
    jobs.sort(key=lambda j: stages.index(j.get("stage", "test")))
    before = doc.get("default", {}).get("before_script", [])
    return ["\n".join([*j.get("before_script", before), *j["script"], *j.get("after_script", [])]) for j in jobs]


def isobench_commands(script: str) -> list[list[str]]:
    """Each isobench command of SCRIPT as argv after the program, variables
    as written; a line that does not lex (an open quote) raises."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        at_command = True
        for i, tok in enumerate(tokens):
            if at_command and os.path.basename(tok) == "isobench":
                assert "${{" not in line, f"{line}: a GitHub expression in a command line; pass it through env"
                args = []
                for arg in tokens[i + 1 :]:
                    if set(arg) <= OPERATOR:
                        break
                    args.append(arg)
                found.append(args)
            at_command = set(tok) <= OPERATOR
    return found


def expand(arg: str, variables: dict[str, str]) -> str:
    def value(m):
        name = m[1] or m[2]
        assert name in variables, f"{arg}: variable {name} unknown to the test (known: {sorted(variables)})"
        return variables[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, arg)


def parse_only(args: list[str]) -> None:
    cmd, path = main, ["isobench"]
    while isinstance(cmd, click.Group):
        assert args and args[0] in cmd.commands, f"{' '.join(path + args)}: no such command"
        cmd, path, args = cmd.commands[args[0]], path + [args[0]], args[1:]
    try:
        cmd.make_context(" ".join(path), list(args)).close()
    except click.UsageError as exc:
        raise AssertionError(f"{' '.join(path + args)}: {exc.format_message()}") from None


def run_pipeline(text: str, scenario: str, tmp_path: Path, monkeypatch) -> list[tuple[list[str], int]]:
    """Run TEXT's isobench lines on a scratch store as SCENARIO's runs say;
    returns each command run with its exit status. Stops where a command
    fails, as the pipeline would."""
    import isobench.checks.noisepilot as pilot
    import isobench.cli.execution as execution

    base_values, new_values, noise, failing, status = SCENARIOS[scenario]
    work = tmp_path / scenario
    (work / "results").mkdir(parents=True)  # the pipelines' `mkdir -p results`
    (work / "bench").mkdir()
    (work / "bench" / "isolation.toml").symlink_to(ROOT / "studies" / "quick.toml")  # the project's own study
    monkeypatch.chdir(work)
    study = load_study("bench/isolation.toml")
    envs = tuple(study.environments)

    def values(v):
        """The baseline environment as steady as ever; the others as the scenario says (the overhead moves)."""
        return {e: TIGHT if e == study.meta.baseline else v for e in envs}

    store_path = str(work / "store.sqlite")
    s = Store(store_path)
    simple_run(s, "ci-base", values(base_values), envs=envs, study=study)  # main's last run (GitLab)
    s.close()
    s = Store(str(work / "main.sqlite"))
    simple_run(s, "main-run", values(base_values), envs=envs, study=study)  # the cached export (GitHub)
    s.close()
    r = CliRunner().invoke(
        main, ["archive", "main-run", "--store", str(work / "main.sqlite"), "-o", "baseline.run.json"]
    )
    assert r.exit_code == 0, r.output

    def fake_execute(study, store, progress, allow_large=False, resume_id=None, new_id=None, **kw):
        return simple_run(store, new_id, values(new_values), envs=tuple(study.environments), study=study)

    monkeypatch.setattr(execution, "execute", fake_execute)  # measuring needs the host
    monkeypatch.setattr(pilot, "cached", lambda *a, **k: fake_pilot(*noise))  # as `doctor` measured it
    variables = {
        "NEW": "ci-new",
        "STUDY": "bench/isolation.toml",
        "BASELINE": "baseline.run.json",
        "CI_PIPELINE_ID": "7",
        "ISOBENCH_STORE": store_path,
    }
    env = {"ISOBENCH_STORE": store_path, "COLUMNS": "100"}
    ran = []
    for script in scripts(yaml.safe_load(text)):
        for args in isobench_commands(script):
            args = [expand(a, variables) for a in args]
            assert args, f"{script}: isobench without a command"
            if args[0] in PARSE_ONLY:
                parse_only(args)
                continue
            r = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
            expected = status if args[0] == failing else 0
            assert r.exit_code == expected, f"isobench {' '.join(args)}: exit {r.exit_code}\n{r.output}"
            if "--junit" in args:
                assert Path(args[args.index("--junit") + 1]).is_file()
            ran.append((args, r.exit_code))
            if r.exit_code:
                return ran
    return ran


@pytest.mark.parametrize("name", PIPELINES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_pipelines_command_lines_run(name, scenario, tmp_path, monkeypatch):
    ran = run_pipeline((EXAMPLES / name).read_text(), scenario, tmp_path, monkeypatch)
    commands = [args[0] for args, _ in ran]
    *_, failing, status = SCENARIOS[scenario]
    assert ran[-1][1] == status and (failing is None or commands[-1] == failing), ran  # the last word: 0, 1 or 4
    if failing == "validate":
        assert commands == ["validate"] and "--strict" in ran[0][0]
        return
    assert {"validate", "run", "archive", "compare"} <= set(commands), commands
    compare = next(args for args, _ in ran if args[0] == "compare")
    assert "--fail-on-change" in compare and "--require-resolution" in compare and "--junit" in compare
    assert "--overhead" in compare  # the gate that cancels the host's drift between the two runs
    assert all(args[1] == "bench/isolation.toml" for args, _ in ran if args[0] in ("validate", "run"))
    if scenario == "blind":
        junit = Path(compare[compare.index("--junit") + 1]).read_text()
        assert "<failure" in junit and "blind: could not have seen" in junit


@pytest.mark.parametrize(
    "broken",
    [
        ("--fail-on-change", "--fail-on-chnage"),  # an option that does not exist
        ("--budget 30m --run-id", "--budget 30x --run-id"),  # a value run refuses
        ("isobench doctor", "isobench doctr"),  # a command that does not exist
        ("--budget 30m --strict", "--budget 30m --stric"),
        ('"$NEW"', '"$NEWER"'),  # a variable nobody sets
        ("--overhead --fail-on-change", "--overhed --fail-on-change"),
        ('"$NEW" --no-progress', '"$NEW --no-progress'),  # an open quote
    ],
)
@pytest.mark.parametrize("name", PIPELINES)
def test_a_broken_line_fails_the_check(name, broken, tmp_path, monkeypatch):
    text = (EXAMPLES / name).read_text()
    assert broken[0] in text
    with pytest.raises((AssertionError, ValueError)):
        run_pipeline(text.replace(broken[0], broken[1]), "pass", tmp_path, monkeypatch)


def test_both_pipelines_are_on_the_ci_page():
    page = (ROOT / "docs" / "ci.md").read_text()
    for name in PIPELINES:
        assert f"ci-examples/{name}" in page


def test_another_projects_pipeline_installs_the_tool_and_gates_its_own_study():
    for name in PIPELINES:
        text = (EXAMPLES / name).read_text()
        assert "uv tool install" in text and "isobench setup --yes" in text, name
        assert "scripts/setup.sh" not in text and ".venv/bin" not in text and "studies/" not in text, name
        assert "STUDY: bench/isolation.toml" in text, name


def test_the_baseline_is_mains_last_complete_run_whatever_the_gate_said():
    """The rule written in docs/ci.md: saved after every complete run on
    main, red or blind included (so it cannot freeze), never after an
    incomplete one."""
    gh = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    steps = gh["jobs"]["isolation-cost"]["steps"]
    (save,) = [s for s in steps if s.get("id") == "newbase"]
    assert save["if"].startswith("always()") and "steps.measure.outcome == 'success'" in save["if"]
    assert "refs/heads/main" in save["if"] and "= complete ]" in save["run"]
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache/save")]
    assert cache["if"].startswith("always()") and "steps.newbase.outputs.saved" in cache["if"]
    gl = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    job = gl["baseline"]
    assert job["stage"] == ".post" and job["rules"][0]["when"] == "always"
    assert any("= complete ]" in line and '"$BASELINE"' in line for line in job["script"])
    page = (ROOT / "docs" / "ci.md").read_text()
    assert "last complete run" in page and "whatever" in page


# -- the forges' own rules -------------------------------------------------------------

# the example's runner label, which actionlint only knows from its config
ACTIONLINT_CONFIG = "self-hosted-runner:\n  labels: [isobench]\n"


def actionlint() -> str:
    """The actionlint scripts/setup.sh builds into the venv (or one on PATH)."""
    where = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    found = shutil.which("actionlint", path=where)
    if not found:  # a host without Go: setup said so; the forge schemas below still hold the file
        pytest.skip("actionlint is not installed: scripts/setup.sh builds it into .venv/bin where Go is on PATH")
    return found


def test_the_github_workflow_passes_actionlint(tmp_path):
    """GitHub's rules as actionlint knows them: contexts where they are
    available, expressions, keys, action inputs (shellcheck and pyflakes,
    not the forge's, left out)."""
    config = tmp_path / "actionlint.yaml"
    config.write_text(ACTIONLINT_CONFIG)
    argv = [actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", "-config-file", str(config)]
    r = subprocess.run([*argv, str(EXAMPLES / "github-actions.yml")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("name", "schema"), [("gitlab-ci.yml", "vendor.gitlab-ci"), ("github-actions.yml", "vendor.github-workflows")]
)
def test_the_pipelines_pass_their_forges_schema(name, schema):
    """GitLab's own CI schema (and SchemaStore's GitHub workflow schema), as check-jsonschema carries them."""
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(EXAMPLES / name)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", PIPELINES)
def test_the_baseline_status_line_is_one_line_for_a_missing_run(name, tmp_path):
    """issue 55: the snippet that reads the new run's status printed a
    Python traceback when the run was missing. Run as the pipeline runs it:
    a shell, the real `isobench` on PATH, a scratch store."""
    import isobench

    (line,) = [ln.strip().removeprefix("- ") for ln in (EXAMPLES / name).read_text().splitlines() if "status=$(" in ln]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "isobench").write_text(f'#!/bin/sh\nexec {sys.executable} -m isobench "$@"\n')
    (bin_dir / "isobench").chmod(0o755)
    store = str(tmp_path / "s.sqlite")
    s = Store(store)
    simple_run(s, "done1", {"native": TIGHT, "docker-nat": TIGHT})
    s.close()
    src = os.path.dirname(os.path.dirname(isobench.__file__))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": src, "ISOBENCH_STORE": store}
    for new, status in (("nope", "missing"), ("done1", "complete")):
        r = subprocess.run(
            ["bash", "-c", f'{line}\necho "status=$status"'], env={**env, "NEW": new}, capture_output=True, text=True
        )
        assert r.stdout.strip() == f"status={status}" and "Traceback" not in r.stderr, r
        assert len(r.stderr.strip().splitlines()) <= 1, r.stderr  # isobench's own one line at most
