"""The real-model tier's prepared projects can fail and can be solved.

Each repository is prepared as the tier prepares it: its verifier refuses it
untouched, accepts a solution written here by hand (on which the project's own
verification commands pass too) and refuses the plausible wrong ones: the work
without its tests, a changed test, a function that reorders its argument, a
fix that only fits the test's cart. ``false_dones`` finds a commit whose tests
fail among those a milestone was verified at.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools.projecttasks import (
    PROJECT_TASKS,
    ProjectTask,
    false_dones,
    prepare_repo,
    run_tests,
)

BY_NAME = {task.name: task for task in PROJECT_TASKS}

JSON_MAIN = (
    '    parser.add_argument("--json", action="store_true")\n'
    "    args = parser.parse_args(argv)\n"
    "    if args.json:\n"
    '        print(json.dumps({"greeting": greeting(args.name)}))\n'
    "        return\n"
)
JSON_TEST = (
    "    def test_json_flag(self):\n"
    "        out = io.StringIO()\n"
    "        with contextlib.redirect_stdout(out):\n"
    '            main(["--json", "Ann"])\n'
    "        printed = json.loads(out.getvalue())\n"
    '        self.assertEqual(printed, {"greeting": "Hello, Ann!"})\n'
    "\n\n"
    'if __name__ == "__main__":\n'
)
MEDIAN = (
    "\n\ndef median(values):\n"
    "    if not values:\n"
    '        raise ValueError("median of an empty list")\n'
    "    ordered = sorted(values)\n"
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2:\n"
    "        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
MEDIAN_TEST = (
    "class MedianTest(unittest.TestCase):\n"
    "    def test_median(self):\n"
    "        self.assertEqual(median([3, 1, 2]), 2)\n"
    "        self.assertEqual(median([4, 1, 3, 2]), 2.5)\n"
    "\n\n"
    'if __name__ == "__main__":\n'
)
MAIN_GUARD = 'if __name__ == "__main__":\n'

# Edits of the prepared files: (path, old text, new text), applied in order.
SOLUTIONS = {
    "project-json-flag": [
        ("greet.py", "import argparse\n", "import argparse\nimport json\n"),
        ("greet.py", "    args = parser.parse_args(argv)\n", JSON_MAIN),
        (
            "test_greet.py",
            "import unittest\n",
            "import contextlib\nimport io\nimport json\nimport unittest\n",
        ),
        ("test_greet.py", "import greeting\n", "import greeting, main\n"),
        ("test_greet.py", "\n\n" + MAIN_GUARD, "\n" + JSON_TEST),
    ],
    "project-median": [
        ("stats/central.py", "[0][0]\n", "[0][0]\n" + MEDIAN),
        ("stats/__init__.py", "mean, mode\n", "mean, median, mode\n"),
        ("stats/__init__.py", '"mean", ', '"mean", "median", '),
        ("tests/test_central.py", "mean, mode\n", "mean, median, mode\n"),
        ("tests/test_central.py", MAIN_GUARD, MEDIAN_TEST),
    ],
    "project-cart-bug": [
        ("shop/cart.py", "subtotal - discount_percent\n", "subtotal - discount\n"),
    ],
}
TESTS_LEFT_OUT = {
    "project-json-flag": 2,  # greet.py's edits only
    "project-median": 3,
}
# A solution whose tests pass that the verifier must refuse, and its reason.
SORTS_IN_PLACE = (
    "stats/central.py",
    "ordered = sorted(values)\n",
    "ordered = values\n    ordered.sort()\n",
)
SPECIAL_CASED = (
    "shop/cart.py",
    "    return subtotal - discount_percent\n",
    "    return 2700 if discount_percent == 10 else subtotal\n",
)
WRONG = {
    "project-median": (
        [*SOLUTIONS["project-median"], SORTS_IN_PLACE],
        "reordered its argument",
    ),
    "project-cart-bug": ([SPECIAL_CASED], "total([(200, 3)], 25) is 600, not 450"),
}


def prepared(task: ProjectTask, tmp_path: Path) -> Path:
    root = tmp_path / task.name
    prepare_repo(task, root)
    return root


def apply(root: Path, edits) -> None:
    for name, old, new in edits:
        path = root / name
        text = path.read_text()
        assert text.count(old) == 1, (name, old)
        path.write_text(text.replace(old, new))


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def test_the_projects_grow_and_each_has_its_own_commands():
    sizes = [len(task.files) for task in PROJECT_TASKS]
    assert sizes == sorted(sizes) and len(set(BY_NAME)) == 3
    assert all(task.verify for task in PROJECT_TASKS)
    assert set(SOLUTIONS) == set(BY_NAME)


@pytest.mark.parametrize("task", PROJECT_TASKS, ids=lambda t: t.name)
def test_an_untouched_repository_fails_its_verifier(task, tmp_path):
    root = prepared(task, tmp_path)
    passed, ran = run_tests(root)
    assert ran == task.tests_before
    # The bug's test fails by name; the others' tests pass, the work undone.
    assert passed.ok == (task.name != "project-cart-bug")
    if not passed.ok:
        assert "test_total_applies_a_percentage_discount" in passed.note
    assert not task.verify_repo(root).ok


@pytest.mark.parametrize("task", PROJECT_TASKS, ids=lambda t: t.name)
def test_a_hand_written_solution_passes_the_verifier_and_the_commands(task, tmp_path):
    root = prepared(task, tmp_path)
    apply(root, SOLUTIONS[task.name])

    verdict = task.verify_repo(root)

    assert verdict.ok, verdict.note
    for command in task.verify:
        done = subprocess.run(
            command, shell=True, cwd=root, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert all((root / path).exists() for path in task.protected)


@pytest.mark.parametrize("name", sorted(TESTS_LEFT_OUT))
def test_the_work_without_its_tests_is_refused(name, tmp_path):
    task = BY_NAME[name]
    root = prepared(task, tmp_path)
    apply(root, SOLUTIONS[name][: TESTS_LEFT_OUT[name]])

    verdict = task.verify_repo(root)

    assert not verdict.ok and "none added" in verdict.note


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_solution_that_only_looks_right_is_refused(name, tmp_path):
    task = BY_NAME[name]
    root = prepared(task, tmp_path)
    edits, reason = WRONG[name]
    apply(root, edits)
    assert run_tests(root)[0].ok

    verdict = task.verify_repo(root)

    assert not verdict.ok and reason in verdict.note, verdict.note


def test_a_changed_test_of_the_bug_is_refused(tmp_path):
    task = BY_NAME["project-cart-bug"]
    root = prepared(task, tmp_path)
    apply(root, [("tests/test_cart.py", "(LINES, 10), 2700", "(LINES, 10), 2990")])

    verdict = task.verify_repo(root)

    assert not verdict.ok and "tests/test_cart.py was changed" in verdict.note


def test_false_dones_are_the_verified_commits_whose_tests_fail(tmp_path):
    task = BY_NAME["project-cart-bug"]
    root = prepared(task, tmp_path)
    git(root, "init", "-q")
    broken = commit(root, "start")
    apply(root, SOLUTIONS[task.name])
    fixed = commit(root, "fix")

    found = false_dones(root, [broken, fixed, broken])

    assert len(found) == 1 and found[0].startswith(broken[:12])
    assert "test_total_applies_a_percentage_discount" in found[0]
    assert false_dones(root, [fixed]) == []
