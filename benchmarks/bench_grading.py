"""Time and memory of the grading pipeline on the bundled examples.

Run: .venv/bin/python benchmarks/bench_grading.py [--repeat N]
Prints one line per measurement; copy the figures, with the machine line, into benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import declaration, extraction, pipeline  # noqa: E402
from autograder.sandbox import Sandbox  # noqa: E402

EXAMPLES = ["correct", "partly-wrong", "gaming-constant", "corrupt-notebook"]


def machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {memory:.0f} GiB, Python {platform.python_version()}, uid {os.getuid()}"


def timed(function, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def summary(label: str, seconds: list[float]) -> str:
    return f"{label}: median {statistics.median(seconds) * 1000:.1f} ms, min {min(seconds) * 1000:.1f} ms, max {max(seconds) * 1000:.1f} ms (n={len(seconds)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    assignment = declaration.load("ch03-a")
    submissions = ROOT / "tests" / "submissions"
    print("machine:", machine())

    notebook = submissions / "correct" / "ch03-a.ipynb"
    print(summary("extract correct notebook", timed(lambda: extraction.extract(notebook, assignment.submission.names), 20)))

    statements = extraction.extract(notebook, assignment.submission.names).statements
    with Sandbox(statements) as student:
        student.load_report
        state = {"used_calls": 1, "max_calls": 3, "spent": 4, "next_cost": 2, "budget": 6}
        print(summary("sandbox call round trip", timed(lambda: student.call("decide_admission", state), 200)))
    print(summary("sandbox start + load + close", timed(lambda: _start_close(statements), 10)))

    for name in EXAMPLES:
        print(summary(f"grade {name}", timed(lambda: pipeline.grade(assignment, submissions / name), args.repeat)))
    # RUSAGE_CHILDREN would report the grader's own size (a child's peak includes the pages it
    # shared with the grader before exec), so only the grader's peak is printed.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of the grader process: {own:.0f} MiB")


def _start_close(statements) -> None:
    with Sandbox(statements) as student:
        student.load_report


if __name__ == "__main__":
    main()
