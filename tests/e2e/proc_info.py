"""Facts about a running server's processes read from /proc (the crash and soak scripts): its
descendants, the Spark driver JVM it launched, and a process's resident memory."""
from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    """``pid`` runs (exists and is not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return False


def jvm_pid(server_pid: int) -> int | None:
    """The live Spark driver JVM below ``server_pid``: its descendant whose command is ``java``."""
    for p in descendants(server_pid):
        try:
            if Path(f"/proc/{p}/comm").read_text().strip() == "java" and alive(p):
                return p
        except OSError:
            continue
    return None


def rss_mb(pid: int | None) -> float:
    """VmRSS of ``pid`` in MB (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
