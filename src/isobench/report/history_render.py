"""`isobench history` in the terminal, as Markdown and as one offline HTML
page: the page's blocks (report/history.py) drawn by the run report's own
block renderers (terminal.draw, markdown.block_md, the blocks.html.j2
macros), so a block looks the same in both reports."""

from __future__ import annotations

from rich.console import Console

from isobench.report.history import Page
from isobench.report.markdown import block_md, md_escape


def render_terminal(page: Page, console: Console) -> None:
    from isobench.report.terminal import draw, plain

    console.print(plain(f"{page.title} ({page.subtitle})", style="bold"))
    # the change points last, so that they are what stays on the screen
    for section in [*page.sections[1:], page.sections[0]]:
        console.print()
        console.print(plain(section.heading, style="bold underline"))
        for block in section.blocks:
            draw(console, block)


def render_markdown(page: Page) -> str:
    out = [f"# {md_escape(page.title)}", "", md_escape(page.subtitle), ""]
    for section in page.sections:
        out += [f"## {md_escape(section.heading)}", ""]
        for block in section.blocks:
            lines = block_md(block)
            if lines:
                out += lines + [""]
    return "\n".join(out)


def render_html(page: Page) -> str:
    from isobench.report import html

    return html.render_page("history.html.j2", page=page)
