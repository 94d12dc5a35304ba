"""A small island's derivative in one mode as a generated Python function on floats.

``w1' = K w1 + L (c0 + B u + sum of the time functions + explicit terms)`` with the mode's
products formed once (``DaeIsland._float_derivative``): each row is a base plus the
coefficients of the states, inputs, time functions and explicit rows, or a copy of one of
them (a position's rate is its speed). Writing the rows out as straight-line code, the
zero coefficients dropped, is what makes the 1-DOF stick-slip mass cost about what a
hand-written right-hand side does.

The source is made from the island's *shape* only (how many states, inputs and functions;
which coefficients are non-zero; which states and inputs each explicit term reads): names
we generate from indices, never a block id, a parameter or a value. The coefficients, the
functions, the explicit terms and their branches enter as the maker's arguments, so one
compiled maker serves every island and mode of the same shape.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numpy as np

from ..generated import run_generated


class Term(NamedTuple):
    """An explicit term: the value indices it reads (None: a reference potential, 0.0),
    the input indices, and whether it takes its element's branch."""
    states: tuple
    inputs: tuple
    switched: bool


class Shape(NamedTuple):
    n_states: int
    n_inputs: int
    n_functions: int
    terms: tuple            # Term per explicit term
    explicit: tuple         # per explicit row: ((term, residual index), ...) summed in order
    rows: tuple             # per state: ("copy", value index) or ("sum", has base, value indices)


def make_derivative(shape: Shape, functions: list, terms: list, branches: list, constants: list) -> Callable:
    """``derivative(t, x, u)`` of lists of floats, returning the derivative array.
    ``functions``: the time functions; ``terms``: the explicit terms' value functions;
    ``branches``: the branch of each switched term; ``constants``: per "sum" row its base
    (if it has one) and its non-zero coefficients, in order."""
    return _maker(shape)(np.array, *functions, *terms, *branches, *constants)


@functools.lru_cache(maxsize=256)
def _maker(shape: Shape) -> Callable:
    n, m = shape.n_states, shape.n_inputs
    values = ([f"x{k}" for k in range(n)] + [f"u{k}" for k in range(m)]
              + [f"f{k}" for k in range(shape.n_functions)] + [f"e{k}" for k in range(len(shape.explicit))])
    functions = [f"_fn{k}" for k in range(shape.n_functions)]
    terms = [f"_term{k}" for k in range(len(shape.terms))]
    branches = [f"_branch{k}" for k, term in enumerate(shape.terms) if term.switched]
    constants, body = [], []
    if n:
        body.append(f"{_unpacked(values[:n])} = x")
    if m:
        body.append(f"{_unpacked(values[n:n + m])} = u")
    body += [f"f{k} = _fn{k}(t)" for k in range(shape.n_functions)]
    for k, term in enumerate(shape.terms):
        states = _tuple(["0.0" if index is None else values[index] for index in term.states])
        inputs = _tuple([values[n + index] for index in term.inputs])
        branch = f", _branch{k}" if term.switched else ""
        body.append(f"r{k} = _term{k}({states}, {inputs}, t{branch})")
    body += [f"e{k} = " + " + ".join(f"r{term}[{i}]" for term, i in parts) for k, parts in enumerate(shape.explicit)]
    out = []
    for k, row in enumerate(shape.rows):
        if row[0] == "copy":
            out.append(values[row[1]])
            continue
        _, has_base, indices = row
        summands = []
        if has_base:
            constants.append(f"_b{k}")
            summands.append(f"_b{k}")
        for index in indices:
            constants.append(f"_k{k}_{index}")
            summands.append(f"_k{k}_{index} * {values[index]}")
        out.append(" + ".join(summands) if summands else "0.0")
    source = "\n".join([f"def make(_array, {', '.join(functions + terms + branches + constants)}):",
                        "    def derivative(t, x, u):"]
                       + [f"        {line}" for line in body]
                       + [f"        return _array({_tuple(out)})", "    return derivative"])
    return run_generated(source, "<island derivative>", {})["make"]


def _tuple(items: list) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _unpacked(names: list) -> str:
    return f"{names[0]}," if len(names) == 1 else ", ".join(names)
