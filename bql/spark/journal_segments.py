"""File segments in the topology journal: a chunk of a JSON-lines file journaled by reference.

The ``file`` source (without ``interval``) does not copy its lines into the journal: it journals one
*segment* entry per chunk of the file (a few MB, cut at a newline)::

    {"seq":S,"ts":T,"seg":{"path":"/abs/file","start":B0,"end":B1,"n":N,"line":L,"pass":P,"k":K,
                           "crc":C[,"tsf":"a.b"]}}

The entry occupies the ``N`` consecutive seqs ``S .. S+N-1``, one per line of bytes ``[B0, B1)`` (blank
and bad lines included, so the tuples a journal yields may have gaps in their seqs). ``L`` is the
1-based line number of the chunk's first line, ``P`` the pass over the file (``repeat``), ``K`` the
non-blank lines (the source's ``num_sent``), ``C`` the CRC-32 of the bytes (a file changed since it
was journaled is reported, not read as other data), ``tsf`` the source's ``timestamp_field``.

Readers expand a segment into journal rows ``(seq, input, ts, data_text, end, error)``
(``expand``): a line that is already tagged JSON with the same meaning (an object without ``"$``,
``\\u`` escapes or 19+ digit runs) passes through as ``data_text`` after a validating parse; any
other line is parsed like the source parses it (``sbpy.bql.jsonio.from_json``) and re-encoded. A
line that does not parse or is not an object yields ``data_text = None`` and an ``error`` text, which
the consumers report on ``dropped_tuples``. Blank lines yield nothing.

Pure Python (no pyspark): the driver's writer and Spark's workers both use it.
"""
from __future__ import annotations

import datetime as _dt
import logging
import re
import zlib
from typing import Any

import orjson

from sbpy.bql.conversions import to_timestamp as _to_timestamp
from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.jsonio import from_json, has_long_digits

from .journal_values import encode_data, ts_to_us

log = logging.getLogger("sbpy.journal")
_loads = orjson.loads

_PATH_STEP = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\"([^\"]*)\"\]")
_SEG_MARK = b'"seg":'

Row = tuple  # (seq, input, ts_us, data_text | None, end, error | None)


def _space_table() -> Any:
    import numpy as np

    table = np.zeros(256, dtype=bool)
    table[list(b" \t\r\x0b\x0c")] = True  # what bytes.strip removes, but the newline
    return table


_SPACE = _space_table()


# ---------------------------------------------------------------- entries


def encode_segment(seq: int, ts_us: int, seg: dict[str, Any]) -> str:
    """One journal line (no trailing newline) for a segment starting at ``seq``."""
    return f'{{"seq":{int(seq)},"ts":{int(ts_us)},"seg":{orjson.dumps(seg).decode("utf-8")}}}'


def is_segment_line(line: bytes) -> bool:
    """Whether a journal line (bytes) is a segment entry (the key follows ``seq`` and ``ts``)."""
    pos = line.find(_SEG_MARK, 0, 64)
    return pos > 0 and line.find(b'"data":', 0, pos) < 0


def last_seq(seq: int, seg: dict[str, Any]) -> int:
    """The last seq a segment starting at ``seq`` occupies."""
    return seq + int(seg["n"]) - 1


def chunk_info(chunk: bytes | memoryview) -> tuple[int, int]:
    """``(lines, non-blank lines)`` of a chunk of a JSON-lines file (a last line may lack its newline):
    lines split at ``\n``, a line blank when ``bytes.strip`` leaves nothing, as ``expand`` reads them.
    Vectorized: only a line that starts with whitespace other than ``\n`` is looked at by itself."""
    import numpy as np

    if not chunk:
        return 0, 0
    a = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(a == 10)
    n = len(newlines) + (chunk[-1] != 10)
    starts = np.concatenate(([0], newlines[:-1] + 1 if chunk[-1] == 10 else newlines + 1))
    first = a[starts]  # each line's first byte (a newline: the line is empty)
    blank = int(np.count_nonzero(first == 10))
    for k in np.flatnonzero(_SPACE[first]):  # starts with other whitespace: blank when nothing else
        end = int(newlines[k]) if k < len(newlines) else len(chunk)  # line k ends at the k-th newline
        if not bytes(chunk[int(starts[k]):end]).strip():
            blank += 1
    return n, n - blank


def make_segment(path: str, start: int, chunk: bytes | memoryview, line: int, pass_no: int, tsf: str | None) -> dict[str, Any]:
    """The segment dict of ``chunk`` (bytes ``start ..`` of ``path``, first line number ``line``)."""
    n, k = chunk_info(chunk)
    seg: dict[str, Any] = {"path": path, "start": start, "end": start + len(chunk), "n": n, "line": line,
                           "pass": pass_no, "k": k, "crc": zlib.crc32(chunk)}
    if tsf:
        seg["tsf"] = tsf
    return seg


# ---------------------------------------------------------------- timestamp_field


def compile_path(path: str) -> list[str | int]:
    """Steps of a simple JSON path (``a.b[0]``, ``["x"]``)."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _PATH_STEP.match(path, pos)
        if not m or m.end() == pos:
            raise ValueError(f"invalid timestamp_field path '{path}'")
        steps.append(m.group(1) if m.group(1) is not None else
                     int(m.group(2)) if m.group(2) is not None else m.group(3))
        pos = m.end()
    return steps


def lookup(data: Any, steps: list[str | int]) -> Any:
    """The value at ``steps`` in ``data`` (None when absent)."""
    for s in steps:
        if isinstance(s, int):
            if not isinstance(data, list) or s >= len(data):
                return None
        elif not isinstance(data, dict) or s not in data:
            return None
        data = data[s]
    return data


def to_timestamp(value: Any) -> _dt.datetime:
    """``value::timestamp`` (epoch seconds or RFC3339); raises ValueError otherwise."""
    try:
        out = _to_timestamp(value)
    except Exception as e:  # BQLEvaluationError
        raise ValueError(str(e)) from None
    if not isinstance(out, _dt.datetime):
        raise ValueError(f"cannot convert {value!r} to a timestamp")
    return out


_STEPS: dict[str, list[str | int]] = {}


def _field_ts(value: Any, tsf: str, default: int, where: str) -> int:
    steps = _STEPS.get(tsf)
    if steps is None:
        steps = _STEPS[tsf] = compile_path(tsf)
    try:
        return ts_to_us(to_timestamp(lookup(value, steps)))
    except ValueError as e:
        log.warning("file source: %s: bad timestamp_field value: %s", where, e)
        return default


# ---------------------------------------------------------------- reading


def _plain(data: bytes) -> bool:
    """Whether JSON text ``data`` reads the same as tagged JSON: no ``"$`` (tagged values, escaped
    keys), no ``\\u`` escape (a ``$`` in disguise) and no run of 19+ digits (``from_json`` turns ints
    beyond int64 into floats)."""
    return b'"$' not in data and b"\\u" not in data and not has_long_digits(data)


def parse_line(line: bytes, plain: bool | None = None) -> tuple[Any, str]:
    """``(value, data_text)`` of one stripped, non-blank line; raises ValueError with the reason.

    A ``_plain`` object keeps its own text (after a validating parse); any other line is parsed as the
    source parses it (``from_json``) and re-encoded. ``plain``: already known for the line's chunk."""
    if line[:1] == b"{" and (plain if plain is not None else _plain(line)):
        try:
            return _loads(line), line.decode("utf-8")
        except orjson.JSONDecodeError:
            pass  # NaN, Infinity, ...: the full parser decides
    try:
        value = from_json(line)
    except BQLEvaluationError as e:
        raise ValueError(f"cannot parse a line: {e}") from None
    if not isinstance(value, dict):
        raise ValueError("a line is not a JSON object")
    try:
        return value, encode_data(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"cannot parse a line: {e}") from None


def read_chunk(seg: dict[str, Any]) -> bytes | None:
    """The bytes of a segment, or None when the file no longer holds them (missing, shorter, changed)."""
    try:
        with open(seg["path"], "rb") as f:
            f.seek(int(seg["start"]))
            chunk = f.read(int(seg["end"]) - int(seg["start"]))
    except OSError:
        return None
    if len(chunk) != int(seg["end"]) - int(seg["start"]) or zlib.crc32(chunk) != int(seg["crc"]):
        return None
    return chunk


def expand(seq: int, ts_us: int, seg: dict[str, Any], input_name: str, after: int, upto: int,
           values: bool = False) -> list[Row]:
    """The rows of the segment entry at ``seq`` whose seq is in ``(after, upto]``; ``values``: a plain
    object line's row carries the parsed map instead of its text (``journal_format.read_entries``)."""
    first = max(seq, after + 1)
    last = min(last_seq(seq, seg), upto)
    if first > last:
        return []
    path = seg["path"]
    chunk = read_chunk(seg)
    if chunk is None:
        error = (f"file source: {path}: bytes {seg['start']}-{seg['end']} changed or are gone since they "
                 f"were read; {last - first + 1} lines lost")
        return [(first, input_name, ts_us, None, False, error)]
    lines = chunk.split(b"\n")
    tsf = seg.get("tsf")
    plain = _plain(chunk)  # one scan of the chunk instead of one per line
    line0 = int(seg["line"]) - seq
    out: list[Row] = []
    append = out.append
    for s in range(first, last + 1):
        raw = lines[s - seq].strip()
        if not raw:
            continue
        if plain and not tsf and raw[:1] == b"{":  # the common case, inlined
            try:
                value = _loads(raw)
                append((s, input_name, ts_us, value if values and type(value) is dict else raw.decode("utf-8"),
                        False, None))
                continue
            except orjson.JSONDecodeError:
                pass
        try:
            value, text = parse_line(raw, True if plain else None)  # a chunk with "$: decide per line
        except ValueError as e:
            append((s, input_name, ts_us, None, False, f"file source: {path}:{line0 + s}: {e}"))
            continue
        ts = _field_ts(value, tsf, ts_us, f"{path}:{line0 + s}") if tsf else ts_us
        append((s, input_name, ts, text, False, None))
    return out


def expand_values(seq: int, ts_us: int, seg: dict[str, Any], input_name: str, after: int, upto: int) -> list[Row]:
    """``expand`` with ``values``."""
    return expand(seq, ts_us, seg, input_name, after, upto, True)
