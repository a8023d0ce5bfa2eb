"""The house: every module of the package holds one idea, so none grows past 450 lines; the
Blender layer is folders by idea, each saying what it holds and what it may import (the
import direction itself is checked by ``lint-imports`` in ``make lint``)."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "welman_ik"
MODULES = sorted(PACKAGE.rglob("*.py"))
LONGEST = 450


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_past_450_lines(module: Path):
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= LONGEST, f"{module.relative_to(PACKAGE)} has {lines} lines: split it along its ideas"


def test_every_folder_of_the_blender_layer_says_what_it_may_import():
    folders = [p for p in (PACKAGE / "blender").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert {p.name for p in folders} >= {"rig", "pins", "drag", "bake", "ui"}
    for folder in folders:
        text = (folder / "__init__.py").read_text(encoding="utf-8")
        assert text.startswith('"""') and "May import" in text, folder.name


LONGEST_CLASS = 210  # "about 200": a class past it holds more than one idea


def test_no_class_past_about_200_lines():
    import ast

    long = []
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > LONGEST_CLASS:
                long.append(f"{module.relative_to(PACKAGE)}: {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, "split along their ideas: " + "; ".join(long)


def test_every_step_of_the_bake_is_under_the_pipeline_contract():
    """A new module in ``bake/`` (but its operators) takes its place in the contract that
    keeps the pipeline free of the drag and the UI."""
    import configparser

    config = configparser.ConfigParser()
    config.read(PACKAGE.parent / ".importlinter")
    listed = set(config["importlinter:contract:bake-pipeline-without-drag"]["source_modules"].split())
    steps = {f"welman_ik.blender.bake.{p.stem}" for p in (PACKAGE / "blender" / "bake").glob("*.py")
             if p.stem not in {"__init__", "operators"}}
    assert listed == steps, {"not listed": sorted(steps - listed), "no such module": sorted(listed - steps)}


def imported_modules(module: Path) -> list[str]:
    """Every module an import statement of ``module`` names, anywhere in it (a function-level
    import too), relative ones resolved: ``from . import x`` names both the package and ``x``."""
    import ast

    package = ["welman_ik", *module.parent.relative_to(PACKAGE).parts]
    names = []
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            names += [origin, *(f"{origin}.{alias.name}" for alias in node.names)]
    return names


@pytest.mark.parametrize(("importer", "imported"), [("job", "onto"), ("onto", "job")])
def test_the_clean_up_and_the_retarget_do_not_import_each_other(importer: str, imported: str):
    """``cleanup/job.py`` (the clean-up of a clip) and ``cleanup/onto.py`` (its retarget) share
    ``clips.py``; ``worker.py`` picks one of them. Neither imports the other, lazily either."""
    other = f"welman_ik.cleanup.{imported}"
    names = imported_modules(PACKAGE / "cleanup" / f"{importer}.py")
    found = [name for name in names if name == other or name.startswith(other + ".")]
    assert not found, f"cleanup/{importer}.py imports {', '.join(found)}: share it through clips.py"
    assert "welman_ik.cleanup.clips" in names  # the imports were read: both read their clips there


def test_the_retarget_is_a_source_of_goals_the_pipeline_makes_no_case_of():
    """The bake's steps ask their plan's goal source (``BakePlan.source``) for goals, keys and
    its own loop, and never whether it is a retarget."""
    bake = PACKAGE / "blender" / "bake"
    steps = ["plan", "sampling", "goals", "solve", "carry", "plants", "log", "keys", "measure", "correct", "report"]
    for step in steps:
        text = (bake / f"{step}.py").read_text()
        assert "plan.retarget" not in text and ".retarget is" not in text, step
