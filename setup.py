"""Packaging glue: maps the top-level folders bql/, server/, plugins/ to sbpy.bql, sbpy.server, sbpy.plugins.

pyproject.toml holds the metadata; setuptools cannot express a folder-to-namespace mapping with a
package list discovered at build time in pyproject alone, so that one job lives here.
"""
from setuptools import find_packages, setup

FOLDERS = ("bql", "server", "plugins")

packages = ["sbpy"]
package_dir = {"sbpy": "sbpy"}
for folder in FOLDERS:
    packages.append(f"sbpy.{folder}")
    package_dir[f"sbpy.{folder}"] = folder
    for sub in find_packages(folder):
        packages.append(f"sbpy.{folder}.{sub}")
        package_dir[f"sbpy.{folder}.{sub}"] = f"{folder}/" + sub.replace(".", "/")

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"sbpy.bql": ["grammar/*.lark"], "sbpy.plugins": ["examples/data/*"],
                  "sbpy.server.console": ["static/*"], "sbpy.bql.spark": ["java/*.java"]},
    include_package_data=True,
)
