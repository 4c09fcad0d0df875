"""Packages are found, not listed, so a new subpackage cannot be left out of the wheel.

mtpinspect.prompts lives in cases/prompts (see package-dir in pyproject.toml), where find_packages()
cannot see it: it is the one name added by hand.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["mtpinspect", "mtpinspect.*"]), "mtpinspect.prompts"])
