"""Finding and loading plugins: the ``sbpy.plugins`` entry-point group, ``plugins:`` module lists and
plugin folders (``plugin_dirs:``; by default ``plugins/`` beside the config file).

An entry point names a module (importing it registers its components) or a callable taking the
registries (``my_plugin:register``). A failing plugin is reported with its name, never half-loaded
silently::

    [project.entry-points."sbpy.plugins"]
    my_plugin = "my_plugin:register"

>>> from sbpy.plugins import PluginRegistries
>>> regs = PluginRegistries()
>>> load_modules(["sbpy.plugins.examples.udfs"], regs)
['sbpy.plugins.examples.udfs']
>>> "my_inc" in regs.udfs
True
"""
from __future__ import annotations

import importlib
import importlib.metadata as md
import logging
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .registry import PluginRegistries, default_registries

log = logging.getLogger("sbpy.plugins")

GROUP = "sbpy.plugins"


class PluginLoadError(Exception):
    """A plugin could not be imported or registered."""

    def __init__(self, name: str, cause: BaseException):
        super().__init__(f"cannot load plugin '{name}': {type(cause).__name__}: {cause}")
        self.name = name
        self.cause = cause


_loaded: set[tuple[int, str]] = set()
_default_specs: list[str] = []  # what was loaded into the default registries, in order


def loaded_plugins() -> tuple[str, ...]:
    """The plugin specs (``module`` or ``module:function``) loaded into the default registries, in
    order: a Spark worker rebuilds the same registries with ``load_modules(loaded_plugins())``."""
    return tuple(_default_specs)


def _apply(name: str, obj: Any, regs: PluginRegistries) -> None:
    """Run a loaded plugin object: a module's ``register(regs)`` when it has one and ``regs`` is not the
    default (a module registers into the default by being imported), or a callable ``f(regs)``."""
    import types

    key = (id(regs), name)
    if key in _loaded:
        return
    if isinstance(obj, types.ModuleType):
        register = getattr(obj, "register", None)
        if callable(register) and regs is not default_registries():
            register(regs)
    elif callable(obj):
        obj(regs)
    _loaded.add(key)
    if regs is default_registries() and name not in _default_specs:
        _default_specs.append(name)


def is_path_spec(name: str) -> bool:
    """A plugin spec naming a file or folder (``folder_specs``) rather than a module."""
    return os.sep in name or "/" in name or name.endswith(".py")


def folder_specs(folder: str | os.PathLike[str]) -> list[str]:
    """The plugin specs of a plugin folder, sorted by name: the absolute path of each ``*.py`` file and
    of each package (a subfolder with ``__init__.py``); names starting with ``_`` or ``.`` are skipped.
    ``NotADirectoryError`` when ``folder`` is not a folder."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"'{root}' is not a folder")
    specs = []
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(("_", ".")):
            continue
        if (entry.is_file() and entry.suffix == ".py") or (entry.is_dir() and (entry / "__init__.py").is_file()):
            specs.append(str(entry))
    return specs


def _import_path(path_text: str) -> Any:
    """Import the module file or package folder ``path_text`` by its own name, its folder appended to
    ``sys.path`` (so it may import its neighbours, and a Spark worker imports it the same way). A name
    already taken by another module (``json.py``) is an error rather than a silent no-op."""
    path = Path(path_text).resolve()
    name = path.stem if path.suffix == ".py" else path.name
    if not name.isidentifier():
        raise ImportError(f"'{path.name}' is not a valid module name")
    file = path / "__init__.py" if path.is_dir() else path
    if not file.is_file():
        raise ImportError(f"'{path}' does not exist")
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    module = importlib.import_module(name)
    origin = getattr(module, "__file__", None)
    if origin is None or Path(origin).resolve() != file:
        raise ImportError(f"the module name '{name}' is already taken by {origin or 'a built-in module'}; "
                          f"rename {path}")
    return module


def load_modules(names: Iterable[str], regs: PluginRegistries | None = None) -> list[str]:
    """Import each module of ``names`` (``plugins:`` in sensorbee.yaml); ``PluginLoadError`` on failure.
    ``module:function`` calls ``function(regs)``; a path (``folder_specs``) imports that file."""
    regs = regs or default_registries()
    done = []
    for name in names:
        try:
            if is_path_spec(name):
                _apply(name, _import_path(name), regs)
                done.append(name)
                continue
            module_name, _, attr = name.partition(":")
            obj: Any = importlib.import_module(module_name)
            if attr:
                obj = getattr(obj, attr)
            _apply(name, obj, regs)
        except Exception as err:  # noqa: BLE001 - reported with the plugin's name
            raise PluginLoadError(name, err) from err
        done.append(name)
    return done


def entry_points() -> list[md.EntryPoint]:
    """The installed entry points of the ``sbpy.plugins`` group, sorted by name."""
    return sorted(md.entry_points(group=GROUP), key=lambda ep: ep.name)


def load_entry_points(regs: PluginRegistries | None = None, strict: bool = False) -> dict[str, str | None]:
    """Load every installed plugin: ``{entry point name: None or the error}``. With ``strict`` the first
    failure raises ``PluginLoadError``; otherwise failures are logged and the others still load."""
    regs = regs or default_registries()
    result: dict[str, str | None] = {}
    for ep in entry_points():
        try:
            _apply(ep.value.replace(" ", ""), ep.load(), regs)  # the same key as load_modules
            result[ep.name] = None
        except Exception as err:  # noqa: BLE001
            error = PluginLoadError(ep.name, err)
            if strict:
                raise error from err
            log.warning("%s", error)
            result[ep.name] = str(error)
    return result


def load_folders(folders: Iterable[str | os.PathLike[str]], regs: PluginRegistries | None = None) -> list[str]:
    """Load every plugin of each folder (``folder_specs``), in order; ``PluginLoadError`` on failure
    (a folder that does not exist too)."""
    done = []
    for folder in folders:
        try:
            specs = folder_specs(folder)
        except OSError as err:
            raise PluginLoadError(str(folder), err) from err
        done += load_modules(specs, regs)
    return done


def load_all(modules: Iterable[str] = (), regs: PluginRegistries | None = None,
             folders: Iterable[str | os.PathLike[str]] = ()) -> PluginRegistries:
    """Entry points, the listed modules, then the plugin folders' modules (server start-up); returns
    the registries."""
    regs = regs or default_registries()
    load_entry_points(regs)
    load_modules(modules, regs)
    load_folders(folders, regs)
    return regs
