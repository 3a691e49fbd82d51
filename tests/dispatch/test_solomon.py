"""The solver's quality bar, short form (bench/solomon.py, docs/dispatch.md "The solver"):
the production call on two Solomon instances, 1.5 s each, within 3% of the best known."""

from __future__ import annotations

import pytest

from bench.solomon import run


@pytest.mark.parametrize("name", ["C101", "R101"])
def test_the_solver_comes_near_the_best_known_distance(name):
    outcome = run(name, seconds=1.5)
    assert outcome.feasible
    assert outcome.gap < 3.0, f"{name}: {outcome.found:.2f} against {outcome.best_known}"
