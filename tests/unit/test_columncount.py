"""The awk command that counts a CSV file's rows by a column's value."""

from __future__ import annotations

import subprocess

from roles.claims.columns import column_count_command, column_extreme_command
from roles.claims.evidence import format_evidence
from roles.claims.evidence_rules import invented_facts
from roles.contracts import ExecutionResult, SubTask

STOCK = "sku,name,quantity\nA-1,orbit,0\nA-2,amber,10\nA-3,maple,0\nA-4,quiet,40\n"
SHARED = "/srv/shop/shared/inventory.csv"


def read(path: str, text: str) -> str:
    return format_evidence("read_file", {"path": path}, text)


DENIED = read(
    "/srv/shop/restricted/inventory.csv", "ERROR: permission denied: the run's user…"
)


def test_a_count_by_a_column_value_names_awk_on_the_file_read(tmp_path):
    ask = "How many items in /srv/shop/restricted/inventory.csv have a quantity of 0?"
    command = column_count_command(ask, [DENIED, read(SHARED, STOCK)])
    assert command == (
        "awk -F, 'NR>1 && $3==0 {n++} END {print n+0}' /srv/shop/shared/inventory.csv"
    )
    copy = tmp_path / "inventory.csv"
    copy.write_text(STOCK)
    ran = command.replace(SHARED, str(copy))
    assert (
        subprocess.run(ran, shell=True, capture_output=True, text=True).stdout == "2\n"
    )


def test_a_word_value_is_compared_as_text():
    orders = "id,status,total\n1,shipped,5\n2,open,7\n3,shipped,1\n"
    ask = "How many orders have the status 'shipped'?"
    assert column_count_command(ask, [read("/srv/o.csv", orders)]) == (
        "awk -F, 'NR>1 && $2==\"shipped\" {n++} END {print n+0}' /srv/o.csv"
    )


def test_no_command_when_the_question_or_the_file_leaves_it_open():
    stock = [read(SHARED, STOCK)]
    # Not a count, no value any row holds, a comparison, no CSV, two CSVs.
    assert column_count_command("What is the quantity of A-1?", stock) == ""
    assert column_count_command("How many have a quantity of 7?", stock) == ""
    assert column_count_command("How many have a quantity above 5?", stock) == ""
    assert column_count_command("How many items have a quantity of 0?", []) == ""
    two = [*stock, read("/srv/b.csv", STOCK)]
    assert column_count_command("How many have a quantity of 0?", two) == ""
    quoted = 'sku,name,quantity\nA-1,"a, b",0\n'
    assert (
        column_count_command("How many have a quantity of 0?", [read(SHARED, quoted)])
        == ""
    )


def test_an_invented_count_by_a_column_value_is_told_that_command():
    # denied-copy, GGS round 1: the executor read the readable copy and claimed 1.
    ask = "How many items in /srv/shop/restricted/inventory.csv have a quantity of 0?"
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent="Count them")
    result = ExecutionResult(
        subtask_id="s1",
        status="completed",
        output="1",
        tool_calls=[DENIED, read(SHARED, STOCK)],
    )
    reason = invented_facts(subtask, result, ask)
    assert "'1' as a total or count, but no tool computed it" in reason
    assert (
        "call the shell tool with the command awk -F, 'NR>1 && $3==0 {n++} END "
        "{print n+0}' /srv/shop/shared/inventory.csv and answer with its number"
    ) in reason


PRICES = "item,price\norbit-1,142.56\nwillow-2,188.28\nember-3,9.21\n"
MIRROR = "/srv/mirror/exports/prices.csv"
ASK = "Get the price list from http://x/prices.csv and tell me the highest price in it."


def claimed(claim: str, *calls: str) -> str:
    subtask = SubTask(subtask_id="s1", parent_task_id="t1", intent="Find it")
    result = ExecutionResult(
        subtask_id="s1", status="completed", output=claim, tool_calls=list(calls)
    )
    return invented_facts(subtask, result, ASK)


def test_a_highest_value_read_among_the_others_is_told_the_command():
    # unreachable-url, GGS round 1: the right 188.28, read from the mirror, was
    # refused only because the validator quoted the claim.
    command = column_extreme_command(ASK, [read(MIRROR, PRICES)])
    assert command == (
        "awk -F, 'NR>1 && (!n++ || $2>m) {m=$2} END {print m}' " + MIRROR
    )
    reason = claimed("The highest price is 188.28.", read(MIRROR, PRICES))
    assert reason.startswith("the claimed 188.28 is one of the values the file holds")
    assert f"call the shell tool with the command {command} and answer" in reason
    # A wrong value read from the file is refused the same way, and so is one
    # the file does not hold.
    assert claimed("The highest price is 142.56.", read(MIRROR, PRICES))
    made_up = claimed("The highest price is 100.00.", read(MIRROR, PRICES))
    assert made_up.startswith("the claimed output states '100.00', which no tool")
    assert f"call the shell tool with the command {command} and answer" in made_up
    ran = format_evidence("shell", {"command": command}, "[exit code 0]\n188.28\n")
    assert claimed("The highest price is 188.28.", read(MIRROR, PRICES), ran) == ""


def test_the_lowest_value_and_what_leaves_it_open():
    lowest = "What is the lowest price in /srv/mirror/exports/prices.csv?"
    assert "$2<m" in column_extreme_command(lowest, [read(MIRROR, PRICES)])
    # No extreme asked, no column named, no CSV read.
    assert (
        column_extreme_command("What is the price of orbit-1?", [read(MIRROR, PRICES)])
        == ""
    )
    assert (
        column_extreme_command("What is the highest one?", [read(MIRROR, PRICES)]) == ""
    )
    assert column_extreme_command(ASK, []) == ""
