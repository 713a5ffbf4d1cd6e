"""The SDK as users get it: the distribution calltrace-sdk, importing as calltrace, with the price table inside.

scripts/test-all.mjs builds the sdist and the wheel (`python -m build`),
installs the wheel into a fresh virtualenv and runs this suite there with
CALLTRACE_SDK_FROM=wheel; the checks below then also prove the code under
test is the wheel's, not this checkout's.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import calltrace

SOURCE = Path(__file__).resolve().parents[1] / "src"


def test_the_distribution_is_calltrace_sdk_at_the_packages_version():
    distribution = importlib.metadata.distribution("calltrace-sdk")
    assert distribution.version == calltrace.__version__
    assert not distribution.requires  # the standard library only


def test_under_the_wheel_the_code_and_the_price_table_come_from_the_installed_package():
    if os.environ.get("CALLTRACE_SDK_FROM") != "wheel":
        # A development install: the package is this checkout's source.
        assert SOURCE in Path(calltrace.__file__).resolve().parents
        return
    installed = Path(calltrace.__file__).resolve()
    assert SOURCE not in installed.parents and "site-packages" in installed.parts
    files = {str(f) for f in importlib.metadata.distribution("calltrace-sdk").files}
    assert {"calltrace/models.json", "calltrace/_attributes.py", "calltrace/providers/gemini.py"} <= files
    assert calltrace._pricing.table_path() == installed.with_name("models.json")
