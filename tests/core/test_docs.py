"""The README and the manual in docs/: every relative link and image resolves to a file of
the repository (and a heading of it, for a link with #anchor), and the README stays the
front door: at most 200 lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped,
    spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_resolves(page: Path):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: outside the repository
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in file.parents and file != ROOT:
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading '{anchor}' in {file.relative_to(ROOT)}")
    assert not broken, broken


def test_the_manual_has_its_pages_and_the_readme_links_each():
    readme = set(links(ROOT / "README.md"))
    for name in ("posing", "reference", "scripting", "mocap", "natural", "performance", "internals",
                 "compatibility", "development"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name
        assert f"docs/{name}.md" in readme, name


def test_the_readme_fits_on_a_screen_or_two():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_the_manual_names_exists(page: Path):
    """A module or file the manual names in backticks (``rig/model.py``, ``welman_ik/core/``,
    ``scripts/demo.py``) exists: relative to the root, ``welman_ik/``, ``welman_ik/blender/``,
    ``welman_ik/core/`` or ``welman_ik/core/solvers/``."""
    bases = [ROOT, ROOT / "welman_ik", ROOT / "welman_ik" / "blender", ROOT / "welman_ik" / "core",
             ROOT / "welman_ik" / "core" / "solvers"]
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    named = re.findall(r"`(\w+/[\w/]*\.py|(?:welman_ik|scripts|tests)/[\w./]*)`", text)
    missing = [path for path in named if not any((base / path).exists() for base in bases)]
    assert named or page.name != "internals.md"
    assert not missing, missing
