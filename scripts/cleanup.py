"""The batch clean-up from a Blender executable (no bpy module needed)::

    blender --background --factory-startup --python scripts/cleanup.py -- CLIPS/ --out CLEANED/ [--workers N]

Everything after ``--`` is ``python -m welman_ik.cleanup``'s arguments. The clips run in
Blender processes of this same executable, ``--workers`` at once; Blender's exit status is
the clean-up's (0: every clip cleaned, 2: some failed).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from welman_ik.cleanup.__main__ import main

arguments = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
sys.exit(main(arguments))
