"""Which files the ``file`` source and sink may touch: only paths under the server's file roots.

A server started by ``sbpy run`` allows ``storage.file_roots`` (default: the config file's folder and
the data folder); the topology makes them current while it builds a source or sink
(``with allowed_roots(roots): cls(params)``), and the plugin's constructor asks
``allowed_path(path, "source")``. Symbolic links are resolved first (``os.path.realpath``), so a link
inside a root that points outside is refused, and the resolved path is what the plugin opens.
Without roots (a topology built in-process, ``sbpy runfile``) every path is allowed as written.

Example::

    with allowed_roots(["/srv/sbpy"]):
        allowed_path("/srv/sbpy/in.jsonl", "source")    # '/srv/sbpy/in.jsonl'
        allowed_path("/etc/passwd", "source")           # ValueError: path '/etc/passwd' is outside ...

Plugins of other packages that read or write files may call ``allowed_path`` the same way.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

__all__ = ["PathNotAllowed", "allowed_path", "allowed_roots", "current_roots", "resolve_roots"]

_ROOTS: ContextVar[tuple[str, ...] | None] = ContextVar("sbpy_file_roots", default=None)


class PathNotAllowed(ValueError):
    """A file path outside every allowed root (a ``ValueError``, so CREATE SOURCE/SINK fails with it)."""


def resolve_roots(roots: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """The roots as absolute paths with symbolic links resolved, duplicates removed, order kept."""
    out: list[str] = []
    for root in roots:
        real = os.path.realpath(os.path.expanduser(os.fspath(root)))
        if real not in out:
            out.append(real)
    return tuple(out)


@contextlib.contextmanager
def allowed_roots(roots: Iterable[str | os.PathLike[str]] | None) -> Iterator[None]:
    """Make ``roots`` the current file roots inside the block (None: no restriction)."""
    token = _ROOTS.set(None if roots is None else resolve_roots(roots))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def current_roots() -> tuple[str, ...] | None:
    """The roots in force (None: every path is allowed)."""
    return _ROOTS.get()


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def allowed_path(path: str, user: str) -> str:
    """``path`` as the plugin must open it: unchanged without roots; else its resolved absolute form,
    or ``PathNotAllowed`` naming the path, the roots and the setting. ``user`` ("source", "sink")
    words the message."""
    roots = current_roots()
    if roots is None:
        return path
    real = os.path.realpath(os.path.expanduser(path))
    if any(_inside(real, root) for root in roots):
        return real
    shown = f"'{path}'" if real == path else f"'{path}' (resolved: '{real}')"
    listed = ", ".join(f"'{r}'" for r in roots) or "none"
    raise PathNotAllowed(f"the {user} path {shown} is outside the allowed file roots ({listed}); "
                         "add its folder to storage.file_roots in the server config to allow it")
