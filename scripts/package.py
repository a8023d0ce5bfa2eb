"""Build the extension .zip with Blender's own extension build and validate commands.

Stages welman_ik/ with blender_manifest.toml beside it (the layout an extension needs),
downloads the wheels the manifest lists into its wheels/ folder (pure Python, one for
every platform), then runs the ``blender_ext.py`` command-line tool that ships with
Blender (here, with the bpy module). Usage: python scripts/package.py [--output DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extension_cli() -> Path:
    import bpy

    scripts = Path(bpy.utils.resource_path("LOCAL")) / "scripts"
    return scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"


def download_wheels(stage: Path) -> None:
    """Fetch the wheels the manifest lists (``./wheels/NAME-VERSION-...whl``) into ``stage``."""
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    for path in manifest.get("wheels", []):
        wheel = stage / path
        name, version = wheel.name.split("-")[:2]
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--dest", str(wheel.parent), f"{name}=={version}"], check=True)
        if not wheel.exists():
            raise FileNotFoundError(f"pip did not fetch {wheel.name}")


def build(output: Path) -> Path:
    output.mkdir(parents=True, exist_ok=True)
    cli = extension_cli()
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "welman_ik"
        shutil.copytree(ROOT / "welman_ik", stage, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy(ROOT / "blender_manifest.toml", stage)
        download_wheels(stage)
        subprocess.run([sys.executable, str(cli), "build", "--source-dir", str(stage), "--output-dir", str(output)],
                       check=True)
    archives = sorted(output.glob("welman_ik-*.zip"))
    subprocess.run([sys.executable, str(cli), "validate", str(archives[-1])], check=True)
    return archives[-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "out")
    print(build(parser.parse_args().output))
