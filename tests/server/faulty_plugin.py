"""A plugin module for topology tests: components that fail in every way a plugin can, and a UDS with
UPDATE STATE and a save that can be made to crash half-way. Registered in the default registries when
imported (``load_modules(["faulty_plugin"])``)."""
from __future__ import annotations

import json
from typing import Any

from sbpy.plugins import SharedState, SinkType, SourceType, Udsf, sink_type, source_type, udf, uds_type, udsf


@udf("faulty_fail_on")
def fail_on(v: int, bad: int) -> int:
    """``v``, or a Python exception when ``v == bad``."""
    if v == bad:
        raise ZeroDivisionError(f"faulty_fail_on got {v}")
    return v


@uds_type("faulty_box")
class Box(SharedState):
    """A value; UPDATE STATE sets it; ``crash_after`` bytes into SAVE STATE the save raises."""

    def __init__(self, value: Any = 0, crash_after: int = -1):
        self.value = value
        self.crash_after = crash_after
        self.terminated = False

    def save(self, w: Any, params: dict[str, Any]) -> None:
        data = json.dumps({"value": self.value}).encode()
        if self.crash_after >= 0:
            w.write(data[: self.crash_after])
            raise OSError("disk on fire")
        w.write(data)

    @classmethod
    def load_state(cls, r: Any, params: dict[str, Any]) -> Box:
        return cls(json.loads(r.read())["value"])

    def update(self, params: dict[str, Any]) -> None:
        if "value" in params:
            self.value = params["value"]
        if "crash_after" in params:
            self.crash_after = params["crash_after"]

    def terminate(self) -> None:
        self.terminated = True


@udf("faulty_box_value")
def box_value(ctx: Any, name: str) -> Any:
    return ctx.state(name, Box).value


@udsf("faulty_udsf")
class Exploding(Udsf):
    def __init__(self, stream: str, boom: bool):
        if boom:
            raise RuntimeError("UDSF constructor exploded")
        self.input(stream)

    def process(self, tup: Any) -> Any:
        if tup.data.get("x", tup.data.get("i")) == 3:
            raise KeyError("no x for you")
        yield {"x": tup.data.get("x", tup.data.get("i")), "seen": True}


@source_type("faulty_source")
class FailingSource(SourceType):
    """``fail_at`` (default -1: never): emits ``{"i": k}`` and raises at ``k == fail_at``;
    ``explode``: the constructor raises."""

    def __init__(self, params: dict[str, Any]):
        if params.get("explode"):
            raise RuntimeError("source constructor exploded")
        super().__init__(params)
        self.fail_at = params.get("fail_at", -1)
        self.n = params.get("n", 5)

    def tuples(self) -> Any:
        for k in range(self.n):
            if k == self.fail_at:
                raise RuntimeError("source broke")
            yield {"i": k}


@sink_type("faulty_sink")
class FailingSink(SinkType):
    """Keeps rows in ``ROWS[name]``; a tuple with ``i == fail_on`` makes the whole write raise.
    UPDATE SINK sets ``fail_on`` (an integer) or ``tag`` (added to every row written after it)."""

    ROWS: dict[str, list[dict[str, Any]]] = {}

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        super().__init__(params, recovering)
        self.name = params.get("name", "default")
        self.fail_on = params.get("fail_on", -1)
        self.tag: Any = None
        FailingSink.ROWS[self.name] = []

    def update(self, params: dict[str, Any]) -> None:
        if "fail_on" in params and (isinstance(params["fail_on"], bool) or not isinstance(params["fail_on"], int)):
            raise ValueError("fail_on must be an integer")
        unknown = sorted(set(params) - {"fail_on", "tag"})
        if unknown:
            raise ValueError(f"unknown parameter '{unknown[0]}'")
        self.fail_on = params.get("fail_on", self.fail_on)
        self.tag = params.get("tag", self.tag)

    def write_tuple(self, data: dict[str, Any]) -> None:
        if data.get("i") == self.fail_on:
            raise RuntimeError("sink broke")
        FailingSink.ROWS[self.name].append(data if self.tag is None else dict(data, tag=self.tag))
