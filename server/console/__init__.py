"""The web console served at ``/``: the topologies of the server, a live graph of each one's sources →
streams → sinks with per-node state, rates, drops and errors, the EXPLAIN of each stream, and buttons
that pause, resume and rewind sources. Plain HTML, one vanilla JavaScript file and SVG, shipped as
package data (``static/``); live updates come as Server-Sent Events.

Modules: ``snapshot`` (what is shown of a topology), ``rates`` (tuples per second from counters),
``events`` (the SSE feed), ``routes`` (the page, assets and ``/api/v1/console/`` routes).
"""
from __future__ import annotations

from .routes import install_console

__all__ = ["install_console"]
