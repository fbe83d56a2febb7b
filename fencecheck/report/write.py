"""Write the three forms of one run's report side by side."""

from __future__ import annotations

from pathlib import Path

from fencecheck.report.model import Run
from fencecheck.report.render_html import render_html
from fencecheck.report.render_json import render_json
from fencecheck.report.render_markdown import render_markdown

FILES = ("evidence.json", "evidence.md", "evidence.html")


def write_reports(run: Run, directory: Path | str, *, artifacts: Path | str | None = None) -> list[Path]:
    """evidence.json, evidence.md and evidence.html in `directory` (created if needed); returns their paths.

    `artifacts` is the directory the run was collected from (default: `directory`); counterexample links in
    the HTML are made relative from `directory` to the files it names.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    source = Path(artifacts) if artifacts is not None else directory
    texts = (
        render_json(run),
        render_markdown(run),
        render_html(run, link_base=directory.resolve(), artifacts=source.resolve()),
    )
    paths = []
    for name, text in zip(FILES, texts, strict=True):
        path = directory / name
        tmp = path.with_name(name + ".tmp")  # a reader never sees half a report
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        paths.append(path)
    return paths
