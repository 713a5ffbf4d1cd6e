"""Build hook: ships the shared price table inside the package.

The one source of truth is sdk/pricing/models.json, which the TypeScript SDK
reads too, so it is never copied into this folder in git. A wheel or sdist
built from the repository gets it force-included as calltrace/models.json; a
wheel built from such an sdist finds it already in src/calltrace. Editable
installs read the repository file in place (see calltrace/_pricing.py).
"""

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGED = {"wheel": "calltrace/models.json", "sdist": "src/calltrace/models.json"}


class PriceTableHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if version == "editable" or self.target_name not in PACKAGED:
            return
        shared = Path(self.root).parent / "pricing" / "models.json"
        if shared.is_file():
            build_data["force_include"][str(shared.resolve())] = PACKAGED[self.target_name]
        elif not Path(self.root, "src", "calltrace", "models.json").is_file():
            raise FileNotFoundError(
                f"price table not found at {shared}: build from the calltrace repository or its sdist"
            )
