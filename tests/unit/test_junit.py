"""JUnit XML: counts, failures, skips, and text that XML could not hold."""

import xml.etree.ElementTree as ET

import pytest

from isobench.core.errors import IsobenchError
from isobench.report.junit import Case, junit_xml, write_junit


def test_cases_failures_and_skips_are_counted():
    xml = junit_xml(
        "isobench compare",
        [
            Case("a on docker-nat", "isobench.compare.quick"),
            Case("b on docker-nat", "isobench.compare.quick", failure="worse by 12%"),
            Case("c on vm", "isobench.compare.quick", skipped="inconclusive"),
        ],
    )
    suite = ET.fromstring(xml.split("\n", 1)[1]).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    failed = [tc for tc in suite if tc.find("failure") is not None]
    assert [tc.get("name") for tc in failed] == ["b on docker-nat"]
    assert failed[0].find("failure").get("message") == "worse by 12%"


def test_control_characters_do_not_break_the_xml():
    xml = junit_xml("s", [Case("x\x1b]52;c;aGVsbG8=\x07", "c", failure="bad\x00")])
    ET.fromstring(xml.split("\n", 1)[1])  # parses
    assert "\\x1b]52" in xml


def test_an_unwritable_path_is_one_line(tmp_path):
    with pytest.raises(IsobenchError, match="--junit .*cannot write"):
        write_junit(tmp_path / "no" / "such.xml", "s", [])
