"""The build step pyproject.toml cannot declare: the repository's top-level codebooks/, contracts/ and
data/ (the layout the design asks for) go into the wheel as adri_pipeline/bundled/, so an installed
package reads them where a checkout reads the top level (adri_pipeline/config.py, `_shipped`). Runs'
outputs under data/ (data/warehouse/, DuckDB files) are left out."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("codebooks", "contracts", "data")
LEFT_OUT = shutil.ignore_patterns("warehouse", "*.duckdb", "*.duckdb.wal", "__pycache__")


class BuildWithShippedFolders(build_py):
    def run(self):
        super().run()
        for folder in SHIPPED:
            target = Path(self.build_lib) / "adri_pipeline" / "bundled" / folder
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / folder, target, ignore=LEFT_OUT)


setup(cmdclass={"build_py": BuildWithShippedFolders})
