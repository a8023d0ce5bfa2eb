"""The extension builds and validates with Blender's own extension tool."""

from __future__ import annotations

import zipfile

import package


def test_extension_builds_and_validates(tmp_path):
    archive = package.build(tmp_path)
    names = zipfile.ZipFile(archive).namelist()
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names and "core/solvers/sr_inverse.py" in names
    assert not any("__pycache__" in n for n in names)
    assert "wheels/threadpoolctl-3.8.0-py3-none-any.whl" in names  # the manifest's wheels, bundled
