#!/usr/bin/env python
"""Time ``compute_dynascore_arrays`` on boards with tied levels of the main metric.

Boards of 1,000 models, five metrics (a main one, three higher and one lower), ``epsilon``
0.1 (the leaderboard's ``MAIN_METRIC_RESOLUTION``):

- ``levels_of_20``: the main metric takes 50 values, 20 models on each (the issue's case of
  ties, many times over);
- ``no_ties``: 1,000 main values 0.1 apart (the paper's formula, every level one model);
- ``two_levels``: two levels of 500 models (the most cross pairs 1,000 models can give).

Each board is timed best of ``--rounds`` x ``--repeats`` calls. With ``--against FILE`` (a
copy of another commit's ``leaderboards/dynascore.py``, e.g. ``git show
1ab793b:leaderboards/dynascore.py > /tmp/old_dynascore.py``) that module is timed too, the
two alternated call by call so that the machine's load weighs on both alike. No database,
no network. Prints one JSON object (milliseconds).

    .venv/bin/python bench/dynascore_ties.py [--against FILE] [--rounds 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leaderboards import dynascore  # noqa: E402

EPSILON = 0.1
MODELS = 1000


def boards() -> dict[str, np.ndarray]:
    """Return the main metric's values of each board (1,000 models)."""
    index = np.arange(MODELS)
    return {
        "levels_of_20": 40.0 + (index % 50) * 0.5,
        "no_ties": 10.0 + index * 0.1001,
        "two_levels": np.where(index % 2 == 0, 40.0, 60.0),
    }


def table(main: np.ndarray) -> np.ndarray:
    """Return the models x metrics values of a board whose main metric is ``main``."""
    rng = np.random.default_rng(0)
    others = rng.uniform(0.0, 100.0, (MODELS, 4))
    return np.column_stack([main, others])


def load_module(path: str):
    spec = importlib.util.spec_from_file_location("dynascore_against", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def best_ms(modules: dict, values: np.ndarray, rounds: int, repeats: int) -> dict[str, float]:
    """Return the best time of each module's ``compute_dynascore_arrays`` on ``values``."""
    names = [f"m{index}" for index in range(MODELS)]
    best = {label: float("inf") for label in modules}
    for _ in range(rounds):
        for _ in range(repeats):
            for label, module in modules.items():
                metrics = [
                    module.MetricInput("acc", weight=4),
                    module.MetricInput("robustness", weight=1),
                    module.MetricInput("fairness", weight=1),
                    module.MetricInput("throughput", weight=1),
                    module.MetricInput("latency", "lower", weight=1, offset=100.0),
                ]
                started = time.perf_counter()
                module.compute_dynascore_arrays(
                    names, values, metrics, main_metric="acc", epsilon=EPSILON
                )
                best[label] = min(best[label], (time.perf_counter() - started) * 1000)
    return {label: round(value, 3) for label, value in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="another dynascore.py to time alongside")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    modules = {"this": dynascore}
    if options.against:
        modules["against"] = load_module(options.against)
    results = {
        board: best_ms(modules, table(main), options.rounds, options.repeats)
        for board, main in boards().items()
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
