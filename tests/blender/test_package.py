"""The extension builds and validates with Blender's own extension tool, and installs and
enables in a fresh Blender."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import package


def test_extension_builds_and_validates(tmp_path):
    archive = package.build(tmp_path)
    names = zipfile.ZipFile(archive).namelist()
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names and "core/solvers/sr_inverse.py" in names
    assert not any("__pycache__" in n for n in names)
    assert "wheels/threadpoolctl-3.8.0-py3-none-any.whl" in names  # the manifest's wheels, bundled


INSTALL = """
import sys
import bpy
result = bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default", enable_on_install=True)
assert result == {"FINISHED"}, result
assert "bl_ext.user_default.welman_ik" in bpy.context.preferences.addons.keys()
bpy.ops.object.armature_add()
obj = bpy.context.object
bpy.ops.object.mode_set(mode="POSE")
if "select" in bpy.types.PoseBone.bl_rna.properties:  # Blender 5: selection on the pose bone
    obj.pose.bones[0].select = True
else:
    obj.pose.bones[0].bone.select = True
obj.data.bones.active = obj.data.bones[0]
assert bpy.ops.welman_ik.pin() == {"FINISHED"}
assert [p.bone for p in obj.welman_ik.pins] == ["Bone"] and obj.welman_ik.solver == "SR_INVERSE"
print("INSTALLED AND ENABLED")
"""


def test_the_zip_installs_and_enables_in_a_fresh_blender(tmp_path):
    """Blender's own Install from Disk (``extensions.package_install_files``) in a new
    process whose user folder is empty: the add-on is enabled, pins a bone, and the wheel
    the manifest lists is installed into the extensions' own site-packages."""
    archive = package.build(tmp_path / "build")
    user = tmp_path / "user"
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(user))
    env.pop("PYTHONPATH", None)  # the installed extension, not the checkout
    done = subprocess.run([sys.executable, "-c", INSTALL, str(archive)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0 and "INSTALLED AND ENABLED" in done.stdout, done.stdout + done.stderr
    assert list(user.glob("extensions/.local/lib/python3.*/site-packages/threadpoolctl.py")), \
        sorted(str(p.relative_to(user)) for p in user.rglob("*threadpoolctl*"))
    assert (user / "extensions" / "user_default" / "welman_ik" / "blender_manifest.toml").is_file()
