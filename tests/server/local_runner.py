"""A stand-in for ``sbpy.bql.spark.query.start_query`` (tests only): a thread that polls the journal
HEAD, feeds new entries through the same fused ``Pipeline`` the Spark operator hosts, and calls
``on_batch`` with the operator's rows.

Without ``processor_context`` the stages are built as a Spark worker builds them (built-ins plus the
plugin modules named in ``StageSpec.plugins``, no states) and the state lives in memory; with it (a
query the topology runs on the driver) they run in a ``driver_query.DriverPipeline`` with the
topology's context and per-batch snapshot files under the checkpoint folder, as on Spark."""
from __future__ import annotations

import threading

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.driver_query import STATE_DIR, DriverPipeline
from sbpy.bql.spark.operator import OUTPUT_COLUMNS, Pipeline


class LocalQuery:
    def __init__(self, query_id, journal_dir, inputs, stages, checkpoint_dir, start_seq, on_batch, topology="",
                 processor_context=None, initial_state=None, before_batch=None, **_):
        self.on_driver = processor_context is not None
        if self.on_driver:
            self.driver = DriverPipeline(stages, topology, processor_context, f"{checkpoint_dir}/{STATE_DIR}",
                                         initial=initial_state)
        else:
            self.pipeline = Pipeline(stages, topology)
            if initial_state is not None:  # handed over by re-planning
                self.pipeline.restore(initial_state)
        self.journal_dir, self.inputs = journal_dir, list(inputs)
        self.pos = start_seq
        self.on_batch = on_batch
        self.before_batch = before_batch
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.batch = 0
        self._thread.start()

    def handoff(self):
        """``(journal position, pipeline snapshot)`` once stopped (what re-planning reads from a Spark
        checkpoint)."""
        pipeline = self.driver.pipeline if self.on_driver else self.pipeline
        return int(self.pos), pipeline.snapshot() if pipeline is not None else None

    @property
    def is_active(self):
        return self._thread.is_alive()

    def _run(self):
        try:
            while not self._stop.is_set():
                head = jf.read_head(self.journal_dir)
                if head > self.pos:
                    if self.before_batch is not None:
                        self.before_batch(self.batch)  # raises: refused before any work, as on Spark
                    rows = jf.read_entries(self.journal_dir, self.inputs, self.pos, head)
                    self.pos = head
                    if rows:
                        if self.on_driver:
                            out = self.driver.run_batch(self.batch, rows)
                        else:
                            out = self.pipeline.run(rows)
                        self.on_batch(self.batch, [dict(zip(OUTPUT_COLUMNS, r)) for r in out])
                        self.batch += 1
                        continue
                self._stop.wait(0.01)
        except BaseException as e:  # noqa: BLE001
            self.error = e

    def stop(self):
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5)


def start_local(**spec):
    return LocalQuery(**spec)
