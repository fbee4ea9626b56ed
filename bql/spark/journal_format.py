"""The topology journal: file layout, the one entry encoder/decoder, HEAD, and a merged reader.

Layout (see docs/architecture.md, "Runtime on Spark")::

    <data_dir>/topologies/<topology>/journal/HEAD                  {"seq": <max committed seq>}
    <data_dir>/topologies/<topology>/journal/<node>/log.jsonl       one entry per line (the first file)
    <data_dir>/topologies/<topology>/journal/<node>/log-<S>.jsonl   the log continued from seq S
    <data_dir>/topologies/<topology>/journal/<node>/pruned.json     what pruning removed (see below)

A node's log is a sequence of files: the writer starts a new one (named by the seq of its first entry)
once the current one exceeds its roll size, and *pruning* deletes whole files every consumer has passed
(``server/journal.py``). ``pruned.json`` (``{"seq": last pruned entry's seq, "count": tuples, "segment":
last pruned file segment or null}``) keeps what the removed files told the writer; a read that would
need a pruned entry raises ``JournalPrunedError`` instead of silently reading less. ``read_log`` and
``read_entries`` read a node's log across its files (``log_files`` lists them).

An entry is ``{"seq":N,"ts":<epoch µs>,"data":{...}}``, an end marker ``{"seq":N,"end":true}``, or a
file segment ``{"seq":N,"ts":T,"seg":{...}}`` that stands for the lines of a chunk of a JSON-lines file
and occupies one seq per line (``journal_segments``). Sequence numbers are topology-wide and strictly
increasing, so within one log they are sorted and across logs ``seq`` order is arrival order; they may
have gaps in the tuples a journal yields (blank and bad lines of a segment). Readers only read entries
with ``seq <= HEAD``; the writer syncs the logs before it moves HEAD (``write_head`` is atomic: temp
file + ``os.replace``, optionally synced).

``data`` round-trips every BQL type through tagged JSON (``journal_values``: ``encode_data``,
``decode_data``, ``ts_to_us``, ``us_to_ts``, re-exported here).

This module is pure Python (no pyspark): the driver's journal writer and the Spark workers both use it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson

from ..durable import fsync_dir
from . import journal_segments as js
from .journal_values import decode_data, decode_data_value, encode_data, ts_to_us, us_to_ts  # noqa: F401 - part of this API

HEAD_FILE = "HEAD"
LOG_FILE = "log.jsonl"
PRUNED_FILE = "pruned.json"
_ROLLED = re.compile(r"log-(\d+)\.jsonl")


class JournalPrunedError(ValueError):
    """A read asked for journal entries that pruning has removed (a consumer older than the prune floor)."""

# ---------------------------------------------------------------- paths


def topology_dir(data_dir: str | os.PathLike[str], topology: str) -> Path:
    """``<data_dir>/topologies/<topology>``."""
    return Path(data_dir) / "topologies" / topology


def journal_dir(data_dir: str | os.PathLike[str], topology: str) -> Path:
    """``<data_dir>/topologies/<topology>/journal``."""
    return topology_dir(data_dir, topology) / "journal"


def checkpoint_dir(data_dir: str | os.PathLike[str], topology: str, consumer: str, version: int = 1) -> Path:
    """``<data_dir>/topologies/<topology>/checkpoints/<consumer>-v<version>``."""
    return topology_dir(data_dir, topology) / "checkpoints" / f"{consumer}-v{version}"


START_SEQ_FILE = "sbpy-start-seq"


def pin_start_seq(checkpoint: str | os.PathLike[str], start_seq: int) -> int:
    """The first-start ``start_seq`` of the query checkpointed at ``checkpoint``.

    Spark logs only each batch's *end* offset; batch 0 starts at the source's initial offset, which
    it asks for again when it replays batch 0 after a crash. So the start seq of a new checkpoint is
    recorded there (atomically) at the first start, and a restart reads it back instead of using the
    journal HEAD of the moment (which would make a replayed batch 0 read nothing and lose its state).
    """
    path = Path(checkpoint) / START_SEQ_FILE
    try:
        return int(orjson.loads(path.read_bytes())["seq"])
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{START_SEQ_FILE}.{os.getpid()}.tmp"
    tmp.write_bytes(orjson.dumps({"seq": int(start_seq)}))
    os.replace(tmp, path)
    return int(start_seq)


def node_log_path(journal_dir: str | os.PathLike[str], node: str) -> Path:
    """``<journal_dir>/<node>/log.jsonl`` (the node's first log file; ``read_log`` given this path reads
    the node's whole log, every file of it)."""
    return Path(journal_dir) / node / LOG_FILE


def rolled_log_path(journal_dir: str | os.PathLike[str], node: str, first_seq: int) -> Path:
    """``<journal_dir>/<node>/log-<first_seq>.jsonl``: the node's log continued from ``first_seq``."""
    return Path(journal_dir) / node / f"log-{int(first_seq)}.jsonl"


def log_files(node_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """The files of a node's log as ``(first seq, path)`` in seq order (``log.jsonl`` counts as 0); every
    entry of a file has a seq below the next file's first seq."""
    out: list[tuple[int, Path]] = []
    try:
        names = os.listdir(node_dir)
    except (FileNotFoundError, NotADirectoryError):
        return out
    for name in names:
        if name == LOG_FILE:
            out.append((0, Path(node_dir) / name))
        else:
            m = _ROLLED.fullmatch(name)
            if m:
                out.append((int(m.group(1)), Path(node_dir) / name))
    out.sort()
    return out


def read_pruned(node_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """``pruned.json`` of a node's log: ``{"seq", "count", "segment"}`` (zeros and None when nothing was
    pruned)."""
    try:
        obj = orjson.loads((Path(node_dir) / PRUNED_FILE).read_bytes())
    except FileNotFoundError:
        return {"seq": 0, "count": 0, "segment": None}
    return {"seq": int(obj["seq"]), "count": int(obj["count"]), "segment": obj.get("segment")}


# ---------------------------------------------------------------- entries


def encode_entry(seq: int, ts_us: int, data: Any) -> str:
    """One journal line (no trailing newline) for a tuple: ``{"seq":N,"ts":T,"data":{...}}``."""
    return f'{{"seq":{int(seq)},"ts":{int(ts_us)},"data":{encode_data(data)}}}'


def encode_entry_text(seq: int, ts_us: int, text: str) -> str:
    """``encode_entry`` of a tuple whose data is already ``encode_data``'s text."""
    return f'{{"seq":{int(seq)},"ts":{int(ts_us)},"data":{text}}}'


def encode_end(seq: int) -> str:
    """One journal line (no trailing newline) for an end marker: ``{"seq":N,"end":true}``."""
    return f'{{"seq":{int(seq)},"end":true}}'


def _split_line(line: str) -> tuple[int, int, str | None, bool]:
    """``(seq, ts_us, data_text, end)`` of a line; ``data_text`` stays tagged JSON text.

    Lines written by ``encode_entry`` take a fast path that does not parse ``data``.
    """
    line = line.strip()
    if line.startswith('{"seq":'):
        comma = line.find(",", 7)
        rest = line[comma + 1:] if comma > 0 else ""
        if rest == '"end":true}':
            return int(line[7:comma]), 0, None, True
        if rest.startswith('"ts":'):
            comma2 = rest.find(",", 5)
            if comma2 > 0 and rest.startswith('"data":', comma2 + 1) and rest.endswith("}"):
                return int(line[7:comma]), int(rest[5:comma2]), rest[comma2 + 8:-1], False
    obj = orjson.loads(line)
    if obj.get("end"):
        return int(obj["seq"]), 0, None, True
    return int(obj["seq"]), int(obj.get("ts", 0)), orjson.dumps(obj.get("data", {})).decode("utf-8"), False


def _split_value(line: bytes, obj: dict[str, Any] | None) -> tuple[int, int, Any, bool]:
    """``_split_line`` of an entry line parsed as ``obj`` (None: no JSON object) that holds no tuple's map
    with an int seq and ts (``_read_file`` decodes those itself): an end marker, or anything else (a line
    that did not parse, data that is no map) with its text kept for the consumer to decode and report, as
    ``_split_line`` gives it."""
    if obj is not None and type(obj.get("seq")) is int and obj.get("end"):
        return obj["seq"], 0, None, True
    return _split_line(line.decode("utf-8"))


def decode_entry(line: str | bytes) -> dict[str, Any]:
    """A journal line as ``{"seq", "ts", "data", "end"}`` (``data`` decoded; None for an end marker);
    a segment entry as ``{"seq", "ts", "data": None, "end": False, "seg": {...}}``."""
    if isinstance(line, str):
        line = line.encode("utf-8")
    if js.is_segment_line(line):
        obj = orjson.loads(line)
        return {"seq": int(obj["seq"]), "ts": int(obj["ts"]), "data": None, "end": False, "seg": obj["seg"]}
    seq, ts, text, end = _split_line(line.decode("utf-8"))
    return {"seq": seq, "ts": ts, "data": None if end else decode_data(text), "end": end}


def scan_entry(line: bytes) -> tuple[int, int, bool, dict[str, Any] | None]:
    """``(first seq, last seq, end, segment or None)`` of a complete journal line (the writer's
    recovery); validates the JSON (without decoding the tuple); raises ValueError on a torn line."""
    obj = orjson.loads(line)
    if type(obj) is not dict or type(obj.get("seq")) is not int:
        raise ValueError("not a journal entry")
    seq, seg = obj["seq"], obj.get("seg")
    if seg is not None:
        return seq, js.last_seq(seq, seg), False, seg
    return seq, seq, bool(obj.get("end")), None


# ---------------------------------------------------------------- HEAD


def read_head(journal_dir: str | os.PathLike[str]) -> int:
    """The max committed seq (0 when nothing was committed yet)."""
    try:
        with open(Path(journal_dir) / HEAD_FILE, "rb") as f:
            return int(orjson.loads(f.read())["seq"])
    except FileNotFoundError:
        return 0


def read_head_batches(journal_dir: str | os.PathLike[str]) -> dict[str, list]:
    """The last micro-batch appended to each query-written node log, ``{node: [query key, batch id]}``,
    committed together with HEAD (see ``write_head``)."""
    try:
        with open(Path(journal_dir) / HEAD_FILE, "rb") as f:
            return dict(orjson.loads(f.read()).get("batches") or {})
    except FileNotFoundError:
        return {}


def write_head(journal_dir: str | os.PathLike[str], seq: int, batches: dict[str, list] | None = None,
               sync: bool = False) -> None:
    """Atomically set HEAD to ``seq`` (write a temp file, then ``os.replace``); ``batches``
    (``{node: [query key, batch id]}``) commits which query batch wrote a node log last, in the same
    atomic step, so a batch replayed after a crash is appended once. ``sync``: fsync the temp file
    before the rename and the folder after it (the new HEAD survives a power loss)."""
    path = Path(journal_dir)
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".{HEAD_FILE}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(orjson.dumps({"seq": int(seq), "batches": batches} if batches else {"seq": int(seq)}))
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path / HEAD_FILE)
    if sync:
        fsync_dir(path)


# ---------------------------------------------------------------- reading

# Per-process memory of where each log's last read ended: (path, inode) -> (seq, byte offset) such that
# every entry before the offset ends at or before that seq. Spark reuses Python workers, so sequential
# micro-batches seek instead of rescanning the file.
_OFFSETS: dict[tuple[str, int], tuple[int, int]] = {}


def _line_span(line: bytes) -> tuple[int, int]:
    """``(first seq, last seq)`` of a journal line (a segment occupies several seqs)."""
    if line.startswith(b'{"seq":'):
        end = line.find(b",", 7)
        if end < 0:
            end = line.find(b"}", 7)
        seq = int(line[7:end])
        if not js.is_segment_line(line):
            return seq, seq
    obj = orjson.loads(line)
    seq = int(obj["seq"])
    seg = obj.get("seg")
    return (seq, js.last_seq(seq, seg)) if seg is not None else (seq, seq)


def _seek_after(f: Any, size: int, after_seq: int, lo: int = 0) -> int:
    """Byte offset of the first complete line whose last seq > ``after_seq`` (bisection on line starts);
    ``lo``: a line start before which every line ends at or before ``after_seq``."""
    hi = size  # invariant: answer in [lo, hi]; lo is a line start
    while hi - lo > 4096:
        mid = (lo + hi) // 2
        f.seek(mid)
        f.readline()  # skip to the next line start
        start = f.tell()
        if start >= hi:
            break
        line = f.readline()
        if not line.endswith(b"\n"):
            hi = start
            break
        if _line_span(line)[1] > after_seq:
            hi = start
        else:
            lo = f.tell()
    f.seek(lo)
    pos = lo
    while pos < hi:
        line = f.readline()
        if not line.endswith(b"\n") or _line_span(line)[1] > after_seq:
            return pos
        pos = f.tell()
    return pos


def _start_pos(f: Any, key: tuple[str, int], size: int, after_seq: int) -> int:
    """Where reading entries after ``after_seq`` starts: bisection from the remembered offset when it
    still holds (a reader that took the next range in another worker is far ahead of it), else from
    the file's start."""
    known = _OFFSETS.get(key)
    if known is None or known[0] > after_seq or known[1] > size:
        return _seek_after(f, size, after_seq)
    return _seek_after(f, size, after_seq, known[1])


Row = tuple  # (seq, input, ts_us, data_text | None, end, error | None)


def read_log(path: str | os.PathLike[str], input_name: str, after_seq: int, upto_seq: int,
             expand: Any = None, values: bool = False) -> list[Row]:
    """Rows of one log with ``after_seq < seq <= upto_seq`` as ``(seq, input, ts_us, data_text, end,
    error)``; a segment entry expands into its lines' rows (``journal_segments.expand``).

    ``path`` a node's ``log.jsonl`` (``node_log_path``): the node's whole log, across its files (only the
    files that can hold the range are opened); raises ``JournalPrunedError`` when pruning removed an
    entry of the range. Any other path: that one file. ``expand``: what a segment entry becomes (default
    ``journal_segments.expand``; same arguments; the native tier reads a segment's raw lines instead).
    ``values``: rows carry a tuple's data decoded where it is a map (``read_entries``)."""
    path = Path(path)
    if path.name != LOG_FILE:
        return _read_file(path, input_name, after_seq, upto_seq, expand, values)
    files = log_files(path.parent)
    if not files or (files[0][0] == 0 and len(files) == 1):  # the common case: one file
        return _read_file(path, input_name, after_seq, upto_seq, expand, values)
    if files[0][0] > after_seq + 1 and files[0][0] > 0:  # the oldest files are gone: was any needed?
        pruned = read_pruned(path.parent)["seq"]
        if pruned > after_seq:
            raise JournalPrunedError(f"journal of '{input_name}': entries up to seq {pruned} were pruned, "
                                     f"a read after seq {after_seq} needs them")
    out: list[Row] = []
    for k, (first, file) in enumerate(files):
        if first > upto_seq:
            break
        if k + 1 < len(files) and files[k + 1][0] <= after_seq + 1:
            continue  # every entry of this file has a seq <= after_seq
        out.extend(_read_file(file, input_name, after_seq, upto_seq, expand, values))
    return out


def _read_file(path: Path, input_name: str, after_seq: int, upto_seq: int, expand: Any = None,
               values: bool = False) -> list[Row]:
    """Rows of one log file with ``after_seq < seq <= upto_seq`` (missing file: none)."""
    if expand is None:
        expand = js.expand_values if values else js.expand
    out: list[Row] = []
    loads, JSONDecodeError = orjson.loads, orjson.JSONDecodeError
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return out
    with f:
        stat = os.fstat(f.fileno())
        key = (str(path), stat.st_ino)
        pos = _start_pos(f, key, stat.st_size, after_seq)
        f.seek(pos)
        last = (after_seq, pos)
        for line in f:
            if not line.endswith(b"\n"):
                break  # a line being written (beyond HEAD)
            # values: every line parsed once (a segment entry is the object with "seg", no "data")
            if values:
                try:
                    obj = loads(line)
                except JSONDecodeError:
                    obj = None
                if type(obj) is not dict:
                    obj = None  # no entry: ``_split_value`` reports it
            else:
                obj = orjson.loads(line) if js.is_segment_line(line) else None
            if obj is not None and "seg" in obj and "data" not in obj:
                seq, seg = int(obj["seq"]), obj["seg"]
                if seq > upto_seq:
                    break
                out.extend(expand(seq, int(obj["ts"]), seg, input_name, after_seq, upto_seq))
                end_seq = js.last_seq(seq, seg)
                if end_seq > upto_seq:  # cut in the middle: the next read starts at this entry again
                    last = (seq - 1, pos)
                    break
            else:
                if (values and obj is not None and type(data := obj.get("data")) is dict
                        and type(seq := obj.get("seq")) is int and type(ts := obj.get("ts")) is int
                        and not obj.get("end")):  # a tuple's map, decoded as it is read
                    text, end = decode_data_value(data) if b'"$' in line else data, False
                elif values:
                    seq, ts, text, end = _split_value(line, obj)
                else:
                    seq, ts, text, end = _split_line(line.decode("utf-8"))
                if seq > upto_seq:
                    break
                if seq > after_seq:
                    out.append((seq, input_name, ts, text, end, None))
                end_seq = seq
            pos += len(line)
            last = (end_seq, pos)
        if len(_OFFSETS) > 4096:  # files pruned or replaced: forget them all (a cache, not a record)
            _OFFSETS.clear()
        _OFFSETS[key] = last
    return out


def read_entries(journal_dir: str | os.PathLike[str], inputs: list[str] | tuple[str, ...], after_seq: int,
                 upto_seq: int, expand: Any = None, values: bool = False) -> list[Row]:
    """Rows of the ``inputs``' logs with ``after_seq < seq <= upto_seq``, merged by seq.

    Each item is ``(seq, input, ts_us, data_text, end, error)``; ``data_text`` is the tagged JSON text
    (decode with ``decode_data``), None for an end marker and for a line of a file segment that is no
    tuple (``error`` then says why: the consumers report it on ``dropped_tuples``).

    ``values``: ``data_text`` is the data already decoded (``decode_data``) wherever it is a map — one
    parse instead of a split and a later decode; a consumer decodes only a row whose item is a str.
    """
    if len(inputs) == 1:  # one log: its entries are in seq order already
        return read_log(node_log_path(journal_dir, inputs[0]), inputs[0], after_seq, upto_seq, expand, values)
    rows: list[Row] = []
    for name in inputs:
        rows.extend(read_log(node_log_path(journal_dir, name), name, after_seq, upto_seq, expand, values))
    rows.sort(key=lambda r: r[0])
    return rows
