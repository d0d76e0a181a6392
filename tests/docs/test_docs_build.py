"""The docs site builds with `mkdocs build --strict` and no warning, and `make test`'s gate would say so.

`make test` runs its own `mkdocs build` line; these tests run that exact line (taken from the
Makefile), so a flag that hides warnings from strict mode (`--quiet` does: it raises the `mkdocs`
logger's level, and strict mode counts only the records that logger lets through) fails here.
"""

from __future__ import annotations

import html
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from snippets import ROOT

import so_middleware

BUILD_SECONDS = 240  # a bound on one build on a loaded 2-core machine, not a speed check


def makefile_docs_build() -> list[str]:
    """The arguments of `make test`'s `mkdocs build` line, after `mkdocs`."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest:", 1)[1].split("\n\n", 1)[0]
    [line] = [line for line in lines.splitlines() if "mkdocs build" in line]
    words = shlex.split(line)
    return words[words.index("build") :]


def build(arguments: list[str], directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", *arguments],
        cwd=directory,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built by `make test`'s line into a temporary directory; it built without a warning."""
    directory = tmp_path_factory.mktemp("site")
    arguments = [word for word in makefile_docs_build() if word not in ("--site-dir", "site")]
    result = build([*arguments, "--site-dir", str(directory)], ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return directory


def test_the_site_builds_strictly_without_a_warning(site: Path) -> None:
    assert (site / "benchmarks" / "index.html").is_file()  # BENCHMARKS.md is on the site
    assert (site / "bench" / "results" / "streaming_cpu.png").is_file()


def test_the_search_ranks_task_pages_above_the_reference(site: Path) -> None:
    """Material's search multiplies a page's score by its boost: every how-to section outweighs
    every reference entry (so "retry" finds the how-tos before `retry_after_seconds`)."""
    entries = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    boosts: dict[str, set[float]] = {}
    for entry in entries:
        boosts.setdefault(entry["location"].split("/")[0], set()).add(entry.get("boost", 1.0))
    assert min(boosts["how-to"]) > 1.0 > max(boosts["reference"])
    assert min(boosts["concepts"]) > 1.0


@pytest.fixture
def site_with_a_broken_link(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the figures](../../BENCHMARKS.md).\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: broken\nstrict: true\nvalidation:\n  links:\n    not_found: warn\n    unrecognized_links: warn\n"
    )
    return tmp_path


def test_the_make_test_gate_fails_on_a_warning(site_with_a_broken_link: Path) -> None:
    result = build(makefile_docs_build(), site_with_a_broken_link)
    assert result.returncode != 0
    assert "Aborted with 1 warnings in strict mode" in result.stdout + result.stderr


def rendered_objects(site: Path) -> set[str]:
    """The identifiers the API reference renders (its `objects.inv`: four header lines, then zlib)."""
    header_and_body = (site / "objects.inv").read_bytes().split(b"\n", 4)
    return {line.split(" ")[0] for line in zlib.decompress(header_and_body[4]).decode().splitlines()}


def test_every_public_name_of_so_middleware_is_in_the_reference(site: Path) -> None:
    rendered = {name.rsplit(".", 1)[-1] for name in rendered_objects(site)}
    assert set(so_middleware.__all__) - {"__version__"} - rendered == set()


def test_the_reference_leads_with_the_entry_points(site: Path) -> None:
    page = (site / "reference" / "so_middleware" / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r'<h2 id="([^"]+)"', page)
    assert headings[:4] == [
        "so_middleware.with_structured_output",
        "so_middleware.ChatClient.get_response",
        "so_middleware.batch.extract_many",
        "so_middleware.ChatAgent",
    ]


def test_every_parameter_has_its_type_and_default_and_adapter_options_are_explained(site: Path) -> None:
    """docs/_ext/parameters.py lists the parameters a docstring leaves out, so each gets its
    TYPE and DEFAULT lines (from the signature)."""
    page = (site / "reference" / "so_middleware" / "index.html").read_text(encoding="utf-8")
    start = page.index('<h2 id="so_middleware.with_structured_output"')
    entry = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page[start : page.index("<h2 id=", start + 1)])))
    for parameter in inspect.signature(so_middleware.with_structured_output).parameters.values():
        name = ("**" if parameter.kind is parameter.VAR_KEYWORD else "") + parameter.name
        assert re.search(re.escape(name) + r" .{0,600}?TYPE: ", entry), f"{name} has no TYPE line"
    assert "max_retries TYPE: int DEFAULT: 2" in entry
    assert "**adapter_options For a raw SDK client" in entry
