"""The machine learning tutorial's classifier: UDS type ``jubaclassifier_arow`` (online multi-class
AROW, Crammer et al. 2009, as Jubatus implements it) and the UDFs ``jubaclassify(model, fv)`` and
``juba_classified_label(scores)``.

Parameters: ``label_field`` (required; the tuple field holding the label when training through a
``uds`` sink), ``regularization_weight`` (C, default 1.0) and ``feature_vector_field`` (default
``feature_vector``). A feature vector is a map of numbers; nested maps are flattened with ``/``
(``{"text": {"sushi": 1}}`` → ``text/sushi``); a string value ``v`` at key ``k`` is the feature
``k$v`` with weight 1. SAVE STATE writes JSON; LOAD STATE (and in-place load) read it back.

    CREATE STATE age_model TYPE jubaclassifier_arow WITH label_field = "age", regularization_weight = 0.001;
    CREATE SINK age_trainer TYPE uds WITH name = "age_model";
    INSERT INTO age_trainer FROM labeled;
    SELECT RSTREAM juba_classified_label(jubaclassify("age_model", feature_vector)) AS age FROM ...;

>>> m = AROW(label_field="l")
>>> for _ in range(3):
...     m.write({"l": "a", "feature_vector": {"x": 1}}); m.write({"l": "b", "feature_vector": {"y": 1}})
>>> juba_classified_label(m.classify({"x": 1}))
'a'
"""
from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO

from sbpy.bql.errors import BQLEvaluationError
from sbpy.plugins.api import Context, SharedState

FORMAT_VERSION = 1


def flatten(fv: Any, prefix: str = "") -> dict[str, float]:
    """A feature vector map as ``{feature: weight}``."""
    if not isinstance(fv, dict):
        raise BQLEvaluationError("a feature vector must be a map")
    out: dict[str, float] = {}
    for key, value in fv.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(flatten(value, name + "/"))
        elif isinstance(value, bool):
            out[name] = 1.0 if value else 0.0
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, str):
            out[f"{name}${value}"] = 1.0
        elif value is not None:
            raise BQLEvaluationError(f"feature '{name}' must be a number, a string or a map")
    return out


class AROW(SharedState):
    """``jubaclassifier_arow``: per label a weight and a variance per feature."""

    type_name = "jubaclassifier_arow"

    def __init__(self, label_field: str, regularization_weight: Any = 1.0,
                 feature_vector_field: str = "feature_vector"):
        if not isinstance(label_field, str) or not label_field:
            raise ValueError("label_field must be a non-empty string")
        if isinstance(regularization_weight, bool) or not isinstance(regularization_weight, (int, float)) \
                or regularization_weight <= 0:
            raise ValueError("regularization_weight must be a positive number")
        self.label_field = label_field
        self.c = float(regularization_weight)
        self.fv_field = feature_vector_field
        self.weights: dict[str, dict[str, list[float]]] = {}  # label → feature → [w, sigma]
        self.lock = threading.Lock()

    # ------------------------------------------------------------ learning

    def _score(self, label: str, x: dict[str, float]) -> float:
        w = self.weights.get(label, {})
        return sum(w[f][0] * v for f, v in x.items() if f in w)

    def train(self, label: str, x: dict[str, float]) -> None:
        with self.lock:
            self.weights.setdefault(label, {})
            correct = self._score(label, x)
            wrong_label, wrong = None, 0.0
            for other in self.weights:
                if other != label:
                    s = self._score(other, x)
                    if wrong_label is None or s > wrong:
                        wrong_label, wrong = other, s
            loss = 1.0 - (correct - wrong)
            if loss <= 0:
                return
            wy = self.weights[label]
            wr = self.weights[wrong_label] if wrong_label is not None else None
            variance = sum(v * v * (wy.get(f, (0, 1.0))[1] + (wr.get(f, (0, 1.0))[1] if wr is not None else 0))
                           for f, v in x.items())
            beta = 1.0 / (variance + 1.0 / self.c)
            alpha = loss * beta
            for f, v in x.items():
                e = wy.setdefault(f, [0.0, 1.0])
                e[0] += alpha * e[1] * v
                e[1] -= beta * e[1] * e[1] * v * v
                if wr is not None:
                    e = wr.setdefault(f, [0.0, 1.0])
                    e[0] -= alpha * e[1] * v
                    e[1] -= beta * e[1] * e[1] * v * v

    def classify(self, fv: Any) -> dict[str, float]:
        x = flatten(fv)
        with self.lock:
            return {label: self._score(label, x) for label in self.weights}

    def write(self, data: dict[str, Any]) -> None:
        """One training tuple (from a ``uds`` sink): label in ``label_field``, features in the fv field."""
        label = data.get(self.label_field)
        if label is None or label == "":
            return
        if not isinstance(label, str):
            raise BQLEvaluationError(f"the label field '{self.label_field}' must be a string")
        if self.fv_field not in data:
            raise BQLEvaluationError(f"the tuple has no '{self.fv_field}' field")
        self.train(label, flatten(data[self.fv_field]))

    # ------------------------------------------------------------ save / load

    def save(self, w: BinaryIO, params: dict[str, Any]) -> None:
        with self.lock:
            doc = {"version": FORMAT_VERSION, "label_field": self.label_field, "regularization_weight": self.c,
                   "feature_vector_field": self.fv_field, "weights": self.weights}
            w.write(json.dumps(doc, separators=(",", ":")).encode())

    @classmethod
    def load_state(cls, r: BinaryIO, params: dict[str, Any]) -> AROW:
        doc = _read(r)
        model = cls(params.get("label_field", doc["label_field"]),
                    params.get("regularization_weight", doc["regularization_weight"]),
                    params.get("feature_vector_field", doc.get("feature_vector_field", "feature_vector")))
        model.weights = doc["weights"]
        return model

    def load(self, r: BinaryIO, params: dict[str, Any]) -> None:
        fresh = self.load_state(r, params)  # parse fully before touching self (exception safe)
        with self.lock:
            self.label_field, self.c, self.fv_field = fresh.label_field, fresh.c, fresh.fv_field
            self.weights = fresh.weights

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()


def _read(r: BinaryIO) -> dict[str, Any]:
    try:
        doc = json.loads(r.read())
    except ValueError as err:
        raise ValueError(f"the saved model is not valid: {err}") from None
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        raise ValueError("the saved model has an unknown format version")
    return doc


def jubaclassify(ctx: Context, model: str, fv: dict) -> dict[str, float]:
    """``jubaclassify(model_name, feature_vector)``: label → score."""
    return ctx.state(model, AROW).classify(fv)


def juba_classified_label(scores: dict) -> Any:
    """``juba_classified_label(scores)``: the label with the highest score (NULL when empty)."""
    best, best_score = None, None
    for label, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise BQLEvaluationError("scores must be numbers")
        if best_score is None or score > best_score:
            best, best_score = label, score
    return best


def register(regs: Any) -> None:
    regs.add_uds_type("jubaclassifier_arow", AROW)
    regs.add_udf("jubaclassify", jubaclassify)
    regs.add_udf("juba_classified_label", juba_classified_label)
