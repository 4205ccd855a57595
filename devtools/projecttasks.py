"""Prepared projects for a real model, of growing size, each with its verifier.

The real-model tier (``tests/model/test_real_project.py``) starts each as a
project on a repository prepared from ``files``, with the project's own
``verify`` commands and ``protected`` paths, and judges the outcome itself:

    project-json-flag   a flag and its test in a small CLI
    project-median      a function and its tests in a three-module package
    project-cart-bug    a bug in a module whose failing test names it

``ProjectTask.verify`` runs the repository's tests outside the project (not
its sandboxed commands, not its claim), counts the tests that ran, checks the
files that must stay as prepared and then the behaviour the request asks for
with inputs no test of the repository uses. ``false_dones`` runs the tests at
each commit the project verified a milestone at: a milestone accepted at a
commit whose tests fail is a false done, as a project ``complete`` whose
directory the verifier refuses is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devtools.tasks import Verdict, write

TESTS = "python3 -m unittest -q"
IGNORE = "__pycache__/\n"


@dataclass(frozen=True)
class ProjectTask:
    """One prepared project: its repository, request, config and verifier."""

    name: str
    files: dict[str, str]
    prompt: str  # ``{dir}`` stands for the repository
    tests_before: int  # the tests the prepared repository has
    behaves: Callable[[Path], Verdict]  # the request's behaviour, checked last
    adds_tests: bool = True  # the request asks for tests of the new work
    kept: tuple[str, ...] = ()  # files that must stay as prepared
    verify: tuple[str, ...] = (TESTS,)
    protected: tuple[str, ...] = ()

    def request(self, root: Path) -> str:
        return self.prompt.format(dir=root)

    def verify_repo(self, root: Path) -> Verdict:
        """Return whether the repository at ``root`` does what was asked."""
        passed, ran = run_tests(root)
        if not passed.ok:
            return passed
        if self.adds_tests and ran <= self.tests_before:
            return Verdict(False, f"python -m unittest ran {ran} tests: none added")
        for name in self.kept:
            path = root / name
            if not path.is_file() or path.read_text() != self.files[name]:
                return Verdict(False, f"{name} was changed or removed")
        verdict = self.behaves(root)
        if not verdict.ok:
            return verdict
        return Verdict(True, f"{ran} tests pass and {verdict.note}")


def prepare_repo(task: ProjectTask, root: Path) -> None:
    """Write the task's files under ``root``: directories 0755, files 0644."""
    root.mkdir(parents=True)
    write(root / ".gitignore", IGNORE)
    for name, text in task.files.items():
        write(root / name, text)
    # Root's, as the tasks' root: a command writes it as root's files.
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def python(root: Path, *args: str) -> subprocess.CompletedProcess:
    """Run this interpreter in ``root``, writing no bytecode beside the code."""
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_tests(root: Path) -> tuple[Verdict, int]:
    """Run the repository's tests; return whether they pass and how many ran."""
    tests = python(root, "-m", "unittest", "-v")
    ran = tests.stderr.count(" ... ")
    if tests.returncode != 0:
        tail = tests.stderr[-300:]
        return Verdict(False, f"python -m unittest failed: {tail!r}"), ran
    return Verdict(True, f"{ran} tests pass"), ran


def script_passes(root: Path, script: str, what: str) -> Verdict:
    """Run ``script`` in ``root``: it passes when it exits 0 (its last line of
    output says why not)."""
    done = python(root, "-c", script)
    if done.returncode == 0:
        return Verdict(True, what)
    lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
    return Verdict(False, f"{what}: no ({lines[-1][:200]})")


def git_files_at(root: Path, commit: str, dest: Path) -> None:
    """Write the files of ``commit`` of the repository at ``root`` into ``dest``."""
    archive = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(root), "archive", commit],
        capture_output=True,
        timeout=60,
        check=True,
    )
    subprocess.run(
        ["tar", "-x", "-C", str(dest)], input=archive.stdout, timeout=60, check=True
    )


def false_dones(root: Path, commits: list[str]) -> list[str]:
    """Return why each commit a milestone was verified at is not done: the
    repository's tests, run here at that commit, fail."""
    found = []
    for commit in dict.fromkeys(commits):
        with tempfile.TemporaryDirectory() as tmp:
            git_files_at(root, commit, Path(tmp))
            passed, _ = run_tests(Path(tmp))
        if not passed.ok:
            found.append(f"{commit[:12]}: {passed.note}")
    return found


# project-json-flag: a flag and its test in a small CLI -------------------------

GREET = '''\
"""Print a greeting."""

import argparse


def greeting(name):
    return f"Hello, {name}!"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Print a greeting.")
    parser.add_argument("name")
    args = parser.parse_args(argv)
    print(greeting(args.name))


if __name__ == "__main__":
    main()
'''

TEST_GREET = """\
import unittest

from greet import greeting


class GreetingTest(unittest.TestCase):
    def test_greeting(self):
        self.assertEqual(greeting("Ann"), "Hello, Ann!")


if __name__ == "__main__":
    unittest.main()
"""

JSON_FLAG = """\
import json, subprocess, sys
def run(*args):
    out = subprocess.run([sys.executable, "greet.py", *args], capture_output=True,
                         text=True, timeout=30)
    return out.stdout.strip()
printed = run("--json", "Bo")
assert json.loads(printed) == {"greeting": "Hello, Bo!"}, f"--json Bo: {printed!r}"
assert run("Bo") == "Hello, Bo!", f"greet.py Bo now prints {run('Bo')!r}"
"""


def json_flag_behaves(root: Path) -> Verdict:
    return script_passes(root, JSON_FLAG, "--json prints the greeting")


# project-median: a function and its tests in a small package -----------------

STATS_INIT = '''\
"""Small statistics over lists of numbers."""

from stats.central import mean, mode
from stats.spread import value_range

__all__ = ["mean", "mode", "value_range"]
'''

STATS_CENTRAL = '''\
"""Measures of the centre of a list of numbers."""

from collections import Counter


def mean(values):
    """Return the arithmetic mean of ``values``; ValueError when it is empty."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def mode(values):
    """Return the most common value, the first seen among equally common ones."""
    if not values:
        raise ValueError("mode of an empty list")
    return Counter(values).most_common(1)[0][0]
'''

STATS_SPREAD = '''\
"""Measures of how far a list of numbers spreads."""


def value_range(values):
    """Return the largest value less the smallest; ValueError when empty."""
    if not values:
        raise ValueError("range of an empty list")
    return max(values) - min(values)
'''

TEST_CENTRAL = """\
import unittest

from stats import mean, mode


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_of_nothing_is_an_error(self):
        with self.assertRaises(ValueError):
            mean([])


class ModeTest(unittest.TestCase):
    def test_mode(self):
        self.assertEqual(mode([3, 1, 3, 2]), 3)


if __name__ == "__main__":
    unittest.main()
"""

TEST_SPREAD = """\
import unittest

from stats import value_range


class RangeTest(unittest.TestCase):
    def test_range(self):
        self.assertEqual(value_range([4, -1, 7]), 8)


if __name__ == "__main__":
    unittest.main()
"""

MEDIAN = """\
from stats import mean, median
values = [9, 1, 5]
assert median(values) == 5, f"median([9, 1, 5]) is {median(values)!r}"
assert values == [9, 1, 5], f"median reordered its argument: {values!r}"
assert median([8, 2, 6, 4]) == 5, f"median([8, 2, 6, 4]) is {median([8, 2, 6, 4])!r}"
assert median([1.5, -2.0]) == -0.25, f"median([1.5, -2.0]) is {median([1.5, -2.0])!r}"
assert median([7]) == 7, f"median([7]) is {median([7])!r}"
try:
    median([])
except ValueError:
    pass
else:
    raise AssertionError("median([]) raised no ValueError")
assert mean([1, 2, 3, 4]) == 2.5, "mean changed"
"""


def median_behaves(root: Path) -> Verdict:
    if "median" not in (root / "tests" / "test_central.py").read_text():
        return Verdict(False, "tests/test_central.py does not test median")
    return script_passes(root, MEDIAN, "median gives the middle of unseen lists")


# project-cart-bug: a bug in a module whose failing test names it -------------

SHOP_INIT = '"""A small shop: cart totals and money formatting."""\n'

SHOP_CART = '''\
"""A cart's lines and its total."""


def line_total(price_cents, quantity):
    """Return one line's price: the unit price times the quantity."""
    return price_cents * quantity


def total(lines, discount_percent=0):
    """Return the total in cents of ``lines`` of (unit price, quantity) less a
    discount of ``discount_percent`` percent of their sum, rounded down to
    whole cents."""
    subtotal = sum(line_total(price, quantity) for price, quantity in lines)
    discount = subtotal * discount_percent // 100
    return subtotal - discount_percent
'''

SHOP_MONEY = '''\
"""Amounts of money as people read them."""


def format_cents(cents):
    """Return ``cents`` in euros, e.g. 1234 as '12.34 EUR'."""
    sign = "-" if cents < 0 else ""
    euros, rest = divmod(abs(cents), 100)
    return f"{sign}{euros}.{rest:02d} EUR"
'''

TEST_CART = """\
import unittest

from shop.cart import line_total, total

LINES = [(1000, 2), (250, 4)]


class CartTest(unittest.TestCase):
    def test_line_total_is_price_times_quantity(self):
        self.assertEqual(line_total(250, 4), 1000)

    def test_total_without_discount_is_the_sum_of_lines(self):
        self.assertEqual(total(LINES), 3000)

    def test_total_applies_a_percentage_discount(self):
        self.assertEqual(total(LINES, 10), 2700)


if __name__ == "__main__":
    unittest.main()
"""

TEST_MONEY = """\
import unittest

from shop.money import format_cents


class MoneyTest(unittest.TestCase):
    def test_format_cents(self):
        self.assertEqual(format_cents(1234), "12.34 EUR")

    def test_format_cents_pads_the_cents(self):
        self.assertEqual(format_cents(5), "0.05 EUR")


if __name__ == "__main__":
    unittest.main()
"""

# Exact in any arithmetic a fix may use (no rounding), so only a fix that
# special-cases the test's cart, or none, is refused.
CART = """\
from shop.cart import total
for lines, percent, expected in [
    ([(200, 3)], 25, 450),
    ([(1000, 1)], 100, 0),
    ([], 50, 0),
    ([(333, 3), (1, 1)], 0, 1000),
    ([(2000, 1)], 15, 1700),
]:
    got = total(lines, percent)
    assert got == expected, f"total({lines}, {percent}) is {got!r}, not {expected}"
"""


def cart_behaves(root: Path) -> Verdict:
    return script_passes(root, CART, "total takes the discount off unseen carts")


PROJECT_TASKS = (
    ProjectTask(
        name="project-json-flag",
        files={"greet.py": GREET, "test_greet.py": TEST_GREET},
        prompt=(
            "In {dir}, add a --json flag to greet.py: with it, `python greet.py "
            '--json Ann` prints {{"greeting": "Hello, Ann!"}} as JSON instead of '
            "the plain line. Add a test for the flag to test_greet.py; "
            "`python -m unittest` must pass."
        ),
        tests_before=1,
        behaves=json_flag_behaves,
    ),
    ProjectTask(
        name="project-median",
        files={
            "stats/__init__.py": STATS_INIT,
            "stats/central.py": STATS_CENTRAL,
            "stats/spread.py": STATS_SPREAD,
            "tests/__init__.py": "",
            "tests/test_central.py": TEST_CENTRAL,
            "tests/test_spread.py": TEST_SPREAD,
        },
        prompt=(
            "In {dir}, add a function median(values) to the stats package, in "
            "stats/central.py beside mean and mode, so that `from stats import "
            "median` works. It returns the middle value of the sorted values, the "
            "mean of the two middle values when there is an even number of them, "
            "and raises ValueError for an empty list; it must not reorder the "
            "caller's list. Add tests of median to tests/test_central.py; "
            "`python3 -m unittest` must pass."
        ),
        tests_before=4,
        behaves=median_behaves,
        kept=("tests/test_spread.py",),
    ),
    ProjectTask(
        name="project-cart-bug",
        files={
            "shop/__init__.py": SHOP_INIT,
            "shop/cart.py": SHOP_CART,
            "shop/money.py": SHOP_MONEY,
            "tests/__init__.py": "",
            "tests/test_cart.py": TEST_CART,
            "tests/test_money.py": TEST_MONEY,
        },
        prompt=(
            "In {dir}, `python3 -m unittest` fails: the test "
            "test_total_applies_a_percentage_discount in tests/test_cart.py. Find "
            "the bug in the shop package and fix it so that every test passes. "
            "Do not change the tests."
        ),
        tests_before=5,
        behaves=cart_behaves,
        adds_tests=False,
        kept=("tests/__init__.py", "tests/test_cart.py", "tests/test_money.py"),
        protected=("tests",),
    ),
)
