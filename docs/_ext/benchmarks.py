"""A MkDocs hook: the repository's BENCHMARKS.md is the site's page `benchmarks.md`.

`make bench` regenerates BENCHMARKS.md in the repository's root, where the README links to it; the
site takes that file as it is at build time (and the plot it shows), so no copy goes stale.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent.parent
# site path -> file in the repository; the page's image keeps its relative path
GENERATED = {
    "benchmarks.md": ROOT / "BENCHMARKS.md",
    "bench/results/streaming_cpu.png": ROOT / "bench" / "results" / "streaming_cpu.png",
}


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    """Add the benchmark page and its image to the site's files."""
    for src_uri, path in GENERATED.items():
        files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files
