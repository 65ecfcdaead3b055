"""The HTML report: one offline file with the table, every figure and the
emulated marking."""

import re

import pytest

from isobench.report.figures import build_figures
from isobench.report.html import inline_svg, render_html
from isobench.results.table import EMULATED_NOTE, build_table
from isobench.store.db import Store
from synthetic_runs import ENVS, Synthetic, write_run


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("html") / "r.sqlite"))
    write_run(store, Synthetic("run-h"))
    run = store.load_run("run-h")
    table = build_table(run)
    specs = build_figures(table, store.extras("run-h"))
    html = render_html(run, specs=specs, table=table)
    store.close()
    return run, table, specs, html


def test_contains_table_with_every_cell(page):
    _, table, _, html = page
    assert '<table class="results" id="table-i">' in html
    for row in table.rows:
        for cell in row.cells:
            assert cell.text.replace("&", "&amp;") in html
    assert re.search(r"40\.75 \(\u22123\.8% \[[^]]+\]\) \[0\.54\] \*", html)  # the verdict marker is kept


def test_every_figure_is_inline_svg(page):
    _, _, specs, html = page
    assert len(specs) == 9
    for spec in specs:
        assert f'<figure id="{spec.slug}" class="figure">' in html
    assert html.count("<svg ") == len(specs) + 1  # and the answer's overview figure
    assert '<figure id="overview" class="figure">' in html
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html


def test_emulated_column_and_figures_are_marked(page):
    _, _, specs, html = page
    assert '<th class="num emulated">vm-tcg \u2020, n=5' in html
    assert html.count(EMULATED_NOTE) >= 1 + len(specs)  # header badge, footnote, every figure


def test_facts_environments_and_study(page):
    run, _, _, html = page
    assert "Synthetic CPU @ 2.0GHz" in html and "6.1.0-test-amd64" in html
    for env in ENVS:
        assert f"<th>{env}" in html
    assert "3.33-3" in html  # a tool version
    assert "[environments.vm-tcg]" in html
    assert "timed out after 600 s" in html  # failures section


def test_offline_no_script_no_external_reference(page):
    html = page[3]
    assert "<script" not in html.lower()
    assert "default-src 'none'" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_svg_ids_are_unique_across_figures(page):
    html = page[3]
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    for ref in set(re.findall(r"url\(#([^)]+)\)", html)):
        assert ref in ids


def test_inline_svg_prefixes_references():
    svg = (
        '<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg xmlns="x"><defs><clipPath id="p1"/></defs>'
        '<g clip-path="url(#p1)"><use xlink:href="#p1"/></g></svg>'
    )
    out = inline_svg(svg, "f")
    assert out.startswith("<svg ")
    assert 'id="f-p1"' in out and "url(#f-p1)" in out and 'href="#f-p1"' in out


def test_names_are_escaped(page):
    run, _, _, _ = page
    run.study_text = "<script>alert(1)</script>"
    assert "<script>alert" not in render_html(run, specs=[])


def test_cli_html_default_path_and_figures(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from isobench.cli.main import main

    store_path = str(tmp_path / "c.sqlite")
    s = Store(store_path)
    write_run(s, Synthetic("run-cli", repetitions=2))
    s.close()
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["report", "run-cli", "--store", store_path, "--format", "html", "--figures", "figs"])
    assert r.exit_code == 0, r.output
    assert "HTML report written to results/run-cli.html" in r.output
    assert (tmp_path / "results" / "run-cli.html").read_text().count("<svg ") == 9 + 1  # + the overview
    assert len(list((tmp_path / "figs").glob("*.svg"))) == 9 and len(list((tmp_path / "figs").glob("*.png"))) == 9
