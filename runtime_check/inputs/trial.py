"""The TensorFlow side of the search: one eager forward call per candidate, and the input sets found.

A trial call records nothing: the checked decorator's issues from it are dropped, since the
checks proper run afterwards on the inputs found, eagerly and traced.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from ..classify import classify, is_graph_only
from ..issues import RECORDER, code_of_check_error, labels
from ..probes import InputSet, label_for
from .search import Contract, Discovery, NotReached, Observation, facts_and_sites, search


def attempt_with(make_callable: Callable[[], Callable[..., Any]]) -> Callable[[list[Any]], Observation]:
    tries = [0]

    def attempt(args: list[Any], gradients: bool = False) -> Observation:
        from ..discover import CannotCall
        from ..exercise import progress

        tries[0] += 1
        progress(f"search for inputs (try {tries[0]})")

        fn = make_callable()
        call_args = [tf.constant(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args]
        before = RECORDER.call_count
        watched = [a for a in call_args if tf.is_tensor(a) and a.dtype.is_floating]
        with RECORDER.discarding(), labels(mode="eager", inputs="(searching)"):
            with tf.GradientTape() as tape:
                for a in watched:
                    tape.watch(a)
                try:
                    result = fn(*call_args)
                except CannotCall:
                    raise
                except Exception as exc:
                    if code_of_check_error(exc) is not None:
                        raise Contract(str(exc)) from exc
                    found = classify(exc, [a for a in call_args if not tf.is_tensor(a)])
                    if found is not None and not is_graph_only(found[0]):
                        raise Contract(found[1]) from exc
                    raise
            variables = [tuple(v.shape) for v in tape.watched_variables()
                         if v.trainable and not any(v is a for a in call_args)]
        if RECORDER.call_count == before:
            if callable(result) and not tf.is_tensor(result):
                raise NotReached("it returns a function, not tensors")
            raise NotReached("no custom-gradient function was called")
        outputs = [t for t in tf.nest.flatten(result)
                   if tf.is_tensor(t) and (t.dtype.is_floating or t.dtype.is_complex)]
        if not outputs:
            raise NotReached("no floating-point output")
        fits = _gradients_fit(tape, outputs, call_args, watched) if gradients else None
        return Observation([tuple(o.shape) for o in outputs], variables, fits)

    return attempt


def _gradients_fit(tape: tf.GradientTape, outputs: list[Any], call_args: list[Any], watched: list[Any]
                   ) -> list[bool | None]:
    """Per argument: does its gradient have its shape (None: not a floating tensor, or no gradient)."""
    with RECORDER.discarding(), labels(mode="eager", inputs="(searching)"):
        try:
            grads = tape.gradient(outputs, watched, output_gradients=[tf.ones_like(o) for o in outputs])
        except Exception:
            grads = [False] * len(watched)  # the backward failed on inputs the forward accepts
    by_arg = {id(a): g for a, g in zip(watched, grads)}
    fits: list[bool | None] = []
    for a in call_args:
        if id(a) not in by_arg or by_arg[id(a)] is None:
            fits.append(None)
        elif by_arg[id(a)] is False:
            fits.append(False)
        else:
            grad = by_arg[id(a)]
            shape = grad.dense_shape if isinstance(grad, tf.IndexedSlices) else tf.shape(grad)
            fits.append(tuple(int(d) for d in np.asarray(shape)) == tuple(a.shape))
    return fits


def discover(make_callable: Callable[[], Callable[..., Any]], names: Sequence[str], path: str | None,
             qualname: str, callee: str | None, defaults: dict[str, Any] | None = None
             ) -> tuple[list[InputSet], Discovery]:
    """Input sets that run the forward, found without configuration, and how the search went.
    ``defaults``: parameters passed as their Python-number default."""
    names = list(names)
    facts, sites, where = facts_and_sites(path, qualname, names, callee)
    facts.defaults = {n: v for n, v in (defaults or {}).items() if n in names}
    from ..discover import CannotCall

    found = search(attempt_with(make_callable), names, facts, sites, fatal=(CannotCall,), site_origins=where)
    sets = []
    from .assign import materialize

    for candidate in found.accepted:
        args = materialize(candidate)
        sets.append(InputSet(args, label_for(names, args), "discovered", origin=found.origin(candidate)))
    for candidate in found.applied:  # last: the report's row and the extra probes use the first
        args = materialize(candidate)
        sets.append(InputSet(args, label_for(names, args), "applied", origin=found.origin(candidate)))
    return sets, found
