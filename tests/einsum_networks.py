"""Random tensor networks for the einsum tests: chains with skip links and hyperedges.

A chain keeps every contraction small (low treewidth) however many indices the
network has, so networks of 60-300 indices contract in milliseconds with small
dimensions. Labels come from `opt_einsum.get_symbol` starting at a random
offset, so most are non-ASCII letters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from opt_einsum import get_symbol


@dataclass
class Network:
    terms: list[list[int]]  # integer labels per tensor
    out: list[int]
    sizes: dict[int, int]
    offset: int  # get_symbol offset of label 0

    def symbol(self, label: int) -> str:
        return get_symbol(self.offset + label)

    @property
    def subscripts(self) -> str:
        lhs = ",".join("".join(self.symbol(x) for x in t) for t in self.terms)
        return lhs + "->" + "".join(self.symbol(x) for x in self.out)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [tuple(self.sizes[x] for x in t) for t in self.terms]

    @property
    def n_indices(self) -> int:
        return len(self.sizes)

    def arrays(self, seed: int, dtype: Any = np.float64) -> list[np.ndarray]:
        """Operands scaled by their summed sizes, so results stay near 1 in magnitude."""
        rng = np.random.default_rng(seed)
        out = set(self.out)
        arrays = []
        for t, shape in zip(self.terms, self.shapes, strict=True):
            summed = math.prod(self.sizes[x] for x in t if x not in out)
            a = rng.random(shape) * 2 / math.sqrt(summed)
            if np.dtype(dtype).kind == "c":
                a = a + 1j * rng.random(shape) / math.sqrt(summed)
            arrays.append(np.asfortranarray(a.astype(dtype)))
        return arrays


@st.composite
def networks(draw: Any, min_indices: int = 60, max_indices: int = 300) -> Network:
    """A chain of tensors with bonds, open legs, skip links and three-way hyperedges."""
    target = draw(st.integers(min_indices, max_indices))
    terms: list[list[int]] = [[]]
    sizes: dict[int, int] = {}
    out: list[int] = []
    label = 0

    def new(size: int) -> int:
        nonlocal label
        sizes[label] = size
        label += 1
        return label - 1

    pending: list[tuple[int, int]] = []  # (label, tensor index that takes it)
    while label < target:
        i = len(terms) - 1
        bond = new(draw(st.integers(1, 3)))
        terms[i].append(bond)
        terms.append([bond])
        kind = draw(st.sampled_from(["none", "open", "skip", "hyper"]))
        if kind == "open" and len(out) < 4:
            leg = new(draw(st.integers(1, 2)))
            terms[i].append(leg)
            out.append(leg)
        elif kind in ("skip", "hyper"):
            leg = new(draw(st.integers(1, 2)))
            terms[i].append(leg)
            if kind == "hyper":
                terms[i + 1].append(leg)
            pending.append((leg, i + 2))
        for lg, at in [p for p in pending if p[1] <= len(terms) - 1]:
            terms[at].append(lg)
            pending.remove((lg, at))
    for lg, _ in pending:
        terms[-1].append(lg)
    terms = [list(draw(st.permutations(t))) for t in terms]
    out = list(draw(st.permutations(out)))
    offset = draw(st.integers(0, 300))
    return Network(terms, out, sizes, offset)
