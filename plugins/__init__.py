"""sbpy's plugin API (``import sbpy.plugins``): UDFs, UDAFs, UDSFs, UDS types, source and sink types.

A plugin is a Python module that registers components when imported, listed in ``sensorbee.yaml``
(``plugins: [my_module]``) or installed with an entry point in the ``sbpy.plugins`` group.
``sbpy plugins`` lists what is installed. See ``sbpy.plugins.api`` for an example module and
``sbpy.plugins.examples`` for the components of the SensorBee document.

``API_VERSION`` is bumped on incompatible changes; a plugin may check it::

    >>> import sbpy.plugins
    >>> sbpy.plugins.API_VERSION >= 1
    True
"""
from __future__ import annotations

from sbpy.bql.runtime.processor import Tuple

from .api import (Context, SharedState, SinkType, SourceType, Udaf, Udf, Udsf, sink_type, source_type, udaf,
                  udf, uds_type, udsf)
from .registry import PluginRegistries, TopologyPlugins, default_registries, for_topology

API_VERSION = 1

__all__ = ["API_VERSION", "Context", "PluginRegistries", "SharedState", "SinkType", "SourceType",
           "TopologyPlugins", "Tuple", "Udaf", "Udf", "Udsf", "default_registries", "for_topology",
           "sink_type", "source_type", "udaf", "udf", "uds_type", "udsf"]
