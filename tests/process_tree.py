"""The live processes below a pid, read from /proc (Linux): what the signal tests check is gone afterwards."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def descendants(root: int) -> dict[int, str]:
    """pid -> start time of every live process below `root` (the start time tells a reused pid apart)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            starts[int(entry.name)] = fields[19]
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = starts[pid]
        todo.extend(children.get(pid, []))
    return found


def running(pid: int, start: str) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X") and fields[19] == start  # zombies have ended


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
