"""The built-in connector types, registered beside the ``file`` and status types
(``sbpy.plugins.registry``): the ``mqtt`` source and sink (``mqtt_source``, ``mqtt_sink``) and the
``http`` ingest source (``http_source``, fed by ``POST /api/v1/topologies/{t}/sources/{s}/tuples``)."""
from __future__ import annotations

from .http_source import HttpSource
from .mqtt_sink import MqttSink
from .mqtt_source import MqttSource

CONNECTOR_SOURCE_TYPES: dict[str, type] = {"mqtt": MqttSource, "http": HttpSource}
CONNECTOR_SINK_TYPES: dict[str, type] = {"mqtt": MqttSink}
