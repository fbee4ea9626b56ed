"""sbpy: a BQL continuous-query server on Spark Structured Streaming.

The code lives in the top-level folders ``bql/`` (language), ``server/`` (topologies, REST, CLI)
and ``plugins/`` (plugin API and built-ins), installed as ``sbpy.bql``, ``sbpy.server`` and
``sbpy.plugins``.
"""

__version__ = "0.1.0"
