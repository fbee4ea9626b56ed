"""The ``mqtt`` source and sink: parameters and message mapping (against the ``file`` source and
``sbpy.bql.jsonio`` as references), then through a real mosquitto broker on loopback: publish ->
source -> stream -> MQTT sink -> subscribe, equal byte for byte to the same topology over the file
source and sink; malformed payloads on dropped_tuples; reconnection; clean stops."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from mqtt_broker import Broker, Client, wait_for
from sbpy.bql.jsonio import from_json, to_json_bytes
from sbpy.bql.parser import parse_script
from sbpy.plugins.builtin.mqtt_client import ConnectionParams, parse_broker
from sbpy.plugins.builtin.mqtt_sink import MessageError, MessageFormat, MqttSink
from sbpy.plugins.builtin.mqtt_source import MqttSource
from sbpy.plugins.builtin.sources import FileSource
from sbpy.plugins.registry import default_registries
from sbpy.server.topology import Topology

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))  # the Spark-free query runner
from local_runner import start_local

# ---------------------------------------------------------------- BQL values for the properties

scalars = hs.one_of(hs.none(), hs.booleans(), hs.integers(-(2**63), 2**63 - 1),
                    hs.floats(allow_nan=False, allow_infinity=False), hs.text(max_size=8))
values = hs.recursive(scalars, lambda inner: hs.lists(inner, max_size=3) |
                      hs.dictionaries(hs.text(max_size=5), inner, max_size=3), max_leaves=8)
maps = hs.dictionaries(hs.text(max_size=6), values, max_size=5)


# ---------------------------------------------------------------- parameters


def test_broker_addresses_as_sensorbee_reads_them():
    assert parse_broker("tcp://10.0.0.1:1884") == "tcp://10.0.0.1:1884"
    assert parse_broker("localhost:1883") == "tcp://localhost:1883"  # the old host:port form
    assert parse_broker("broker.example") == "tcp://broker.example:1883"
    assert parse_broker("wss://h/") == "wss://h:443"
    for bad, message in (("host:", "invalid broker URL"), ("tcp://:1883", "invalid broker URL"),
                         ("gopher://h:1", "unsupported broker scheme 'gopher'"), ("", "non-empty")):
        with pytest.raises(ValueError, match=message):
            parse_broker(bad)


@pytest.mark.parametrize("params, message", [
    ({}, "topic parameter is missing"),
    ({"topic": 1}, "topic must be a non-empty string"),
    ({"topic": "a", "qos": 3}, "qos must be 0, 1 or 2"),
    ({"topic": "a", "qos": True}, "qos must be 0, 1 or 2"),
    ({"topic": "a", "payload_format": "xml"}, "payload_format must be one of blob, json"),
    ({"topic": "a", "topic_field": "t"}, "topic_field needs payload_format"),
    ({"topic": "a", "broker": 5}, "broker must be a string"),
    ({"topic": "a", "reconnect_min_time": "5s", "reconnect_max_time": "1s"}, "must not be less"),
    ({"topic": "a", "reconnect_min_time": "soon"}, "reconnect_min_time must be a duration"),
])
def test_source_parameter_errors(params, message):
    with pytest.raises(ValueError, match=message):
        MqttSource(params)


def test_connection_parameters_defaults_and_durations():
    p = ConnectionParams.from_params({"reconnect_min_time": "500ms", "reconnect_max_time": 1.5, "user": "u"})
    assert (str(p.broker), p.reconnect_min, p.reconnect_max, p.user, p.password) == (
        "tcp://127.0.0.1:1883", 0.5, 1.5, "u", None)


@pytest.mark.parametrize("params, message", [
    ({"default_topic": ""}, "empty default topic is not supported"),
    ({"default_qos": 5}, "default_qos must be 0, 1 or 2"),
    ({"topic_field": "a..b"}, "topic_field is not a valid field path"),
    ({"payload_field": 3}, "payload_field must be a string"),
])
def test_sink_parameter_errors(params, message):
    with pytest.raises(ValueError, match=message):
        MessageFormat(params)


# ---------------------------------------------------------------- tuples <-> messages


def test_sink_messages_follow_sensorbee_rules():
    fmt = MessageFormat({})
    assert fmt.message({"topic": "a/b", "payload": "text", "qos": 2}) == ("a/b", b"text", 2)
    assert fmt.message({"topic": "a", "payload": b"\x00\xff"}) == ("a", b"\x00\xff", 0)
    assert fmt.message({"topic": "a", "payload": {"x": 2, "y": 2.0}}) == ("a", b'{"x":2,"y":2.0}', 0)
    assert fmt.message({"topic": "a", "payload": [1, "z"]}) == ("a", b'[1,"z"]', 0)
    for data, message in (({"topic": "a", "payload": 5}, "data type 'int' cannot be used as payload"),
                          ({"topic": "a"}, "payload field is missing"),
                          ({"payload": "p"}, "topic field 'topic' is missing"),
                          ({"topic": 1, "payload": "p"}, "topic must be a string"),
                          ({"topic": "a", "payload": "p", "qos": 3}, "wrong QoS: 3"),
                          ({"topic": "a", "payload": "p", "qos": 1.0}, "qos must be an int")):
        with pytest.raises(MessageError, match=message):
            fmt.message(data)
    nested = MessageFormat({"topic_field": "m.t", "payload_field": "m.p", "qos_field": "q",
                            "default_topic": "dflt", "default_qos": 1})
    assert nested.message({"m": {"t": "x", "p": "v"}}) == ("x", b"v", 1)
    assert nested.message({"m": {"p": "v"}, "q": 0}) == ("dflt", b"v", 0)


@settings(max_examples=150, deadline=None)
@given(maps)
def test_whole_tuple_payload_is_the_tuples_bql_json(data):
    data.pop("topic", None)  # these two name the message's topic and QoS
    data.pop("qos", None)
    topic, body, qos = MessageFormat({"payload_field": "*", "default_topic": "t"}).message(data)
    assert (topic, body, qos) == ("t", to_json_bytes(data), 0)
    assert from_json(body) == data


payload_lines = hs.one_of(
    maps.map(lambda m: to_json_bytes(m)),                       # an object
    values.map(lambda v: to_json_bytes(v)),                     # any JSON value (mostly not an object)
    hs.text(min_size=1, max_size=12).map(lambda s: s.encode()),  # usually not JSON
).filter(lambda b: b.strip() != b"" and b"\n" not in b and b"\r" not in b and b.strip() == b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=payload_lines)
def test_json_payloads_parse_as_the_file_source_parses_a_line(tmp_path, payload):
    """The reference is the file source: the same tuple for the same bytes, or the same error."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(payload + b"\n")
    [(_, ref_data, ref_error)] = list(FileSource({"path": str(path)})._lines(None))
    data, error = MqttSource({"topic": "x", "payload_format": "json"}).to_tuple("a/b", payload)
    assert data == ref_data
    prefix = f"file source: {path}:1: "
    assert (error is None) == (ref_error is None)
    if error is not None:
        assert error == "mqtt source: topic 'a/b': " + ref_error.removeprefix(prefix).replace("a line", "a payload")


def test_blob_format_is_sensorbees_tuple_and_topic_field_adds_the_topic():
    assert MqttSource({"topic": "x"}).to_tuple("a/b", b"{}") == ({"topic": "a/b", "payload": b"{}"}, None)
    source = MqttSource({"topic": "x", "payload_format": "json", "topic_field": "from"})
    assert source.to_tuple("a/b", b'{"v": 1}') == ({"v": 1, "from": "a/b"}, None)


# ---------------------------------------------------------------- through a real broker


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path)
    yield b
    b.stop()


@pytest.fixture
def client(broker):
    c = Client(broker)
    yield c
    c.close()


class Ctx:
    def __init__(self, data_dir):
        self.data_dir = data_dir


@pytest.fixture
def topologies(tmp_path):
    made = []

    def make(name):
        t = Topology(name, Ctx(tmp_path / f"data-{name}"), query_starter=start_local)
        made.append(t)
        return t

    yield make
    for t in made:
        t.stop()


def run(t, script):
    return [t.execute(p) for p in parse_script(script)]


def paho_threads():
    return [t for t in threading.enumerate() if t.name.startswith("paho-mqtt-client-") and t.is_alive()]


STREAM = """CREATE STREAM x AS SELECT RSTREAM id, v * 2 AS v2, name, src
            FROM s [RANGE 1 TUPLES] WHERE id % 3 != 1;"""


def rows(n):
    """Varied tuples: ints, floats that print as 2.0, strings needing escapes, nulls."""
    return [{"id": i, "v": [i, i / 2, None][i % 3], "name": f"n\"{i}\u00e9" if i % 4 else None} for i in range(n)]


def file_source_error(tmp_path, payload):
    """What the file source says of ``payload`` as a line, without its ``file source: path:n:`` prefix
    and with "payload" for "line"."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(payload + b"\n")
    [(_, _, error)] = list(FileSource({"path": str(path)})._lines(None))
    return error.removeprefix(f"file source: {path}:1: ").replace("a line", "a payload")


def test_round_trip_equals_the_file_source_and_sink(topologies, broker, client, tmp_path):
    inputs = rows(40)
    malformed = {7: b"{not json", 19: b"[1, 2]", 31: b'"text"'}  # published before input i
    ref = topologies("ref")
    (tmp_path / "in.jsonl").write_bytes(b"".join(to_json_bytes({**d, "src": "in/sensors"}) + b"\n"
                                                 for d in inputs))
    run(ref, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                 {STREAM}
                 CREATE SINK k TYPE file WITH path = "{tmp_path}/ref.jsonl";
                 INSERT INTO k FROM x; RESUME SOURCE s;""")
    assert wait_for(lambda: ref.node("stream", "x")["state"] == "stopped", 20)
    expected = (tmp_path / "ref.jsonl").read_bytes().splitlines()
    assert len(expected) == len([d for d in inputs if d["id"] % 3 != 1])

    t = topologies("live")
    others = set(paho_threads())  # the test's client
    dropped = []
    t.subscribe_dropped(dropped.append)
    run(t, f"""CREATE SOURCE s TYPE mqtt WITH broker = "{broker.address}", topic = "in/#", qos = 1,
                   payload_format = "json", topic_field = "src";
               {STREAM}
               CREATE SINK k TYPE mqtt WITH broker = "tcp://{broker.address}", default_topic = "out/rows",
                   payload_field = "*", default_qos = 1;
               INSERT INTO k FROM x;""")
    client.subscribe("out/#")
    assert wait_for(lambda: t.node("source", "s")["status"]["source"]["subscribed"])
    for i, d in enumerate(inputs):
        if i in malformed:
            client.publish("in/sensors", malformed[i])
        client.publish("in/sensors", to_json_bytes(d))
    assert wait_for(lambda: len(client.received()) >= len(expected) and len(dropped) >= len(malformed), 20)
    assert client.received() == [("out/rows", line) for line in expected]
    assert [(e["node_name"], e["event_type"], e["data"]) for e in dropped] == [
        ("s", "input", {"topic": "in/sensors", "payload": malformed[i]}) for i in sorted(malformed)]
    assert [e["error"] for e in dropped] == [
        "mqtt source: topic 'in/sensors': " + file_source_error(tmp_path, malformed[i]) for i in sorted(malformed)]
    status = t.node("source", "s")["status"]
    assert status["output_stats"]["num_sent_total"] == len(inputs)
    assert status["source"]["num_dropped"] == len(malformed)
    assert wait_for(lambda: t.node("sink", "k")["status"]["sink"]["num_published"] == len(expected))
    threads = set(paho_threads()) - others
    assert len(threads) == 2  # the source's and the sink's
    t.stop()
    assert wait_for(lambda: not threads & set(paho_threads()), 10), "the network threads stop with the topology"


def test_blob_payloads_decoded_in_bql_and_sensorbee_style_sink(topologies, broker, client):
    t = topologies("blob")
    run(t, f"""CREATE SOURCE s TYPE mqtt WITH broker = "{broker.address}", topic = "dev/+/temp";
               CREATE STREAM x AS SELECT RSTREAM "alerts/" || topic AS topic, decode_json(payload) AS payload
                   FROM s [RANGE 1 TUPLES];
               CREATE SINK k TYPE mqtt WITH broker = "{broker.address}";
               INSERT INTO k FROM x;""")
    client.subscribe("alerts/#")
    assert wait_for(lambda: t.node("source", "s")["status"]["source"]["subscribed"])
    client.publish("dev/1/temp", b'{"c": 21.5}')
    client.publish("dev/2/temp", b'{"c": 19}')
    assert wait_for(lambda: len(client.received()) >= 2)
    assert client.received() == [("alerts/dev/1/temp", b'{"c":21.5}'), ("alerts/dev/2/temp", b'{"c":19}')]


def test_create_sink_fails_without_a_broker_and_leaves_no_thread(broker):
    port = broker.port
    broker.stop()
    before = set(paho_threads())
    with pytest.raises(ConnectionError, match=f"cannot connect to the MQTT broker tcp://127.0.0.1:{port}: "
                                              "Connection refused"):
        MqttSink({"broker": f"127.0.0.1:{port}"})
    assert set(paho_threads()) <= before


def test_sink_drops_bad_tuples_and_publishes_the_rest(broker, client):
    client.subscribe("t")
    sink = MqttSink({"broker": broker.address, "default_topic": "t"})
    try:
        sink.write([{"payload": "a"}, {"payload": 1}, {"payload": "b", "qos": 7}, {"payload": "c"}], ("q", 0))
        sink.write([{"payload": "a"}], ("q", 0))  # a replayed batch is skipped
        assert wait_for(lambda: len(client.received()) >= 2)
        assert client.received() == [("t", b"a"), ("t", b"c")]
        assert sink.status()["num_dropped"] == 2 and sink.status()["num_published"] == 2
    finally:
        sink.close()


def test_source_and_sink_reconnect_after_the_broker_restarts(tmp_path, topologies):
    broker = Broker(tmp_path)
    try:
        t = topologies("re")
        run(t, f"""CREATE SOURCE s TYPE mqtt WITH broker = "{broker.address}", topic = "in", qos = 1,
                       payload_format = "json", reconnect_min_time = "100ms", reconnect_max_time = "200ms";
                   CREATE STREAM x AS SELECT RSTREAM n FROM s [RANGE 1 TUPLES];
                   CREATE SINK k TYPE mqtt WITH broker = "{broker.address}", default_topic = "out",
                       payload_field = "*", reconnect_min_time = 0.1, reconnect_max_time = 0.2;
                   INSERT INTO k FROM x;""")
        source = lambda: t.node("source", "s")["status"]["source"]
        assert wait_for(lambda: source()["subscribed"])
        port = broker.port
        broker.stop()
        assert wait_for(lambda: not source()["connected"])
        assert "connection lost" in source()["last_error"]
        broker = Broker(tmp_path, port)  # the same address again
        client = Client(broker)
        try:
            client.subscribe("out")
            assert wait_for(lambda: source()["subscribed"], 20)  # reconnected and subscribed again
            client.publish("in", b'{"n": 1}')
            assert wait_for(lambda: client.received() == [("out", b'{"n":1}')], 20)
        finally:
            client.close()
    finally:
        broker.stop()


def test_builtin_types_are_registered():
    regs = default_registries()
    assert regs.source_types.get("mqtt") is MqttSource and regs.sink_types.get("mqtt") is MqttSink
