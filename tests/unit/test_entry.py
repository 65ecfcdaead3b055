"""The command's outermost frame: one line for every error, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from isobench.cli import entry
from isobench.core.errors import EnvironmentError_


@pytest.fixture
def boom(monkeypatch, tmp_path):
    """A CLI whose command raises what the test puts in `box`."""
    box: dict = {}

    @click.group()
    def fake():
        pass

    @fake.command()
    def go():
        raise box["exc"]

    import isobench.cli.main

    monkeypatch.setattr(isobench.cli.main, "main", fake)
    monkeypatch.setattr(entry, "_log_dir", lambda: str(tmp_path))
    return box


def test_unexpected_error_is_one_line_with_a_log(boom, capsys, tmp_path):
    boom["exc"] = ZeroDivisionError("division by zero\nsecond line")
    with pytest.raises(SystemExit) as ended:
        entry.main(["go"])
    assert ended.value.code == entry.EXIT_UNEXPECTED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: unexpected ZeroDivisionError: division by zero")
    logs = list(tmp_path.glob("error-*.log"))
    assert len(logs) == 1 and "ZeroDivisionError" in logs[0].read_text()
    assert str(logs[0]) in err


def test_known_error_is_its_own_line(boom, capsys):
    boom["exc"] = EnvironmentError_("Docker Engine is not reachable; start it with scripts/install-host.sh")
    with pytest.raises(SystemExit) as ended:
        entry.main(["go"])
    assert ended.value.code == entry.EXIT_ERROR
    assert capsys.readouterr().err == ("error: Docker Engine is not reachable; start it with scripts/install-host.sh\n")


def test_debug_prints_the_traceback(boom, capsys):
    boom["exc"] = KeyError("x")
    with pytest.raises(SystemExit):
        entry.main(["go", "--debug"])
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_user_text_is_printed_literally(boom, capsys):
    boom["exc"] = EnvironmentError_("study: a [study] table with [bold]name[/] is required")
    with pytest.raises(SystemExit):
        entry.main(["go"])
    assert "a [study] table with [bold]name[/] is required" in capsys.readouterr().err


def test_python_dash_m_goes_through_the_frame():
    proc = subprocess.run([sys.executable, "-m", "isobench", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "version" in proc.stdout
