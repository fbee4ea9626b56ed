"""The plugins of the SensorBee document, registered when this package is imported
(``plugins: [sbpy.plugins.examples]`` in sensorbee.yaml).

- ``udfs``: ``my_inc``, ``my_join``, ``my_join2``
- ``counter``: UDS type ``my_counter`` and ``my_next_count``
- ``udsfs``: UDSFs ``word_splitter``, ``ticker``; sources ``ticker``, ``lorem``
- ``wordcount``: source ``wc_sentences``, UDSF ``wc_tokenizer`` (``data/wordcount.bql``)
- ``nlp``: ``filter_punctuation_marks``, ``nlp_to_lower``, ``nlp_split``, ``filter_stop_words``, ``nlp_weight_tf``
- ``jubatus``: UDS type ``jubaclassifier_arow``, ``jubaclassify``, ``juba_classified_label``
- ``tweets``: a generated labelled data set (``data/train.bql`` trains on it)

``register(registries)`` adds them all to other registries (tests)::

    >>> from sbpy.plugins import PluginRegistries
    >>> regs = PluginRegistries(); register(regs)
    >>> "jubaclassifier_arow" in regs.uds_types
    True
"""
from __future__ import annotations

from typing import Any

from . import counter, jubatus, nlp, udfs, udsfs, wordcount

MODULES = (udfs, counter, udsfs, wordcount, nlp, jubatus)


def register(regs: Any) -> None:
    """Register every example component into ``regs`` (a ``PluginRegistries``)."""
    for module in MODULES:
        module.register(regs)


def _register_default() -> None:
    from sbpy.plugins.registry import default_registries

    regs = default_registries()
    if "my_inc" not in regs.udfs:  # importing twice (e.g. reload) must not fail
        register(regs)


_register_default()
