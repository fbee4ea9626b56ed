"""The nodes of a running topology: sources, streams, sinks, their statuses, the fusion planner and
ad-hoc SELECT cursors."""
