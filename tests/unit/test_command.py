"""A shell command read by a real parser: its pipelines, programs and what it counts."""

import pytest

from roles.claims.command import Program, Redirect, parse_command
from roles.claims.command_queries import (
    command_counts,
    counted_files,
    counts,
    counts_every_line,
    looks_for,
    selects_by_field,
)


def stages(text: str) -> list[list[str]]:
    """Return the program names of each pipeline of ``text``."""
    return [[p.name for p in line.programs] for line in parse_command(text).pipelines]


def only(text: str) -> Program:
    """Return the one program ``text`` runs."""
    [[program]] = [line.programs for line in parse_command(text).pipelines]
    return program


def test_list_items_are_pipelines_and_stages_are_joined_by_pipes():
    assert stages("cd /srv && grep -c x a | wc -l; ls || echo none & date") == [
        ["cd"],
        ["grep", "wc"],
        ["ls"],
        ["echo"],
        ["date"],
    ]


def test_quotes_holding_pipes_and_semicolons_are_one_word():
    [[grep, wc]] = [
        line.programs
        for line in parse_command("grep 'a|b;c' \"x && y\" | wc -l").pipelines
    ]
    assert grep.operands == ("a|b;c", "x && y") and wc.flags == ("-l",)


def test_words_lose_their_quotes_and_keep_their_expansions():
    command = "echo \"a $x b\\\"c\" 'q'\\''r' $'a\\tb' pre\"fix\" \\; ~/d $(ls)"
    [[ls], [echo]] = [line.programs for line in parse_command(command).pipelines]
    assert ls.name == "ls"
    assert echo.operands == ('a $x b"c', "q'r", "a\tb", "prefix", ";", "~/d", "$(ls)")


def test_a_substitution_is_a_pipeline_of_its_own_run_before_its_holder():
    assert stages("echo \"n: $(find . -name '*.py' | wc -l)\" `date`") == [
        ["find", "wc"],
        ["date"],
        ["echo"],
    ]
    assert stages("x=$(wc -l < f) && echo $x") == [["wc"], ["echo"]]
    assert stages("diff <(sort a) b") == [["sort"], ["diff"]]


def test_a_compound_stage_stands_for_the_last_pipeline_it_runs():
    assert stages("(cd d && ls) | wc -l") == [["cd"], ["ls", "wc"]]
    assert stages("for f in *; do wc -l $f; done | sort -n") == [["wc", "sort"]]
    assert stages("bash -lc 'cd d; ls | grep x' | wc -l") == [
        ["cd"],
        ["ls", "grep", "wc"],
    ]
    assert stages("f() { ls; }; f") == [["ls"], ["f"]]


def test_xargs_and_find_exec_add_the_program_they_run_as_a_stage():
    [[ls, xargs, wc]] = [
        line.programs for line in parse_command("ls | xargs -n1 wc -l").pipelines
    ]
    assert (xargs.flag("-n"), wc.via, wc.flags) == ("1", "xargs", ("-l",))
    [[find, grep]] = [
        line.programs
        for line in parse_command(
            "find . -type f \\( -name '*.py' -o -name '*.pyi' \\) -exec grep -c x {} +"
        ).pipelines
    ]
    assert find.operands == (".",) and find.flag_values("-name") == ("*.py", "*.pyi")
    assert (grep.via, grep.operands) == ("-exec", ("x", "{}"))


def test_redirects_and_here_docs_belong_to_their_stage():
    wc = only("wc -l < in.txt 2>/dev/null")
    assert wc.redirects == (Redirect("<", "in.txt"), Redirect("2>", "/dev/null"))
    [[cat, wc]] = [
        line.programs for line in parse_command("cat <<EOF | wc -l\na|b\nEOF").pipelines
    ]
    assert cat.redirects == (Redirect("<<", "a|b\n"),) and wc.name == "wc"
    assert only('wc -l <<< "$x"').redirects == (Redirect("<<<", "$x"),)


def test_prefixes_and_assignments_are_skipped_and_the_name_is_a_basename():
    grep = only("LC_ALL=C sudo -u bob env -i A=1 timeout 5 nice -n 3 /bin/grep x f")
    assert (grep.name, grep.operands) == ("grep", ("x", "f"))
    assert only("time -p wc -l f").name == "wc"
    assert only("command -v ls").name == "command"


def test_combined_short_flags_are_split_and_option_values_are_not_operands():
    grep = only("grep -vcie ERROR -A3 --max-count=2 --regexp WARN app.log")
    assert grep.flags == ("-v", "-c", "-i", "-e", "-A", "--max-count", "--regexp")
    assert grep.flag_values("-e", "--regexp") == ("ERROR", "WARN")
    assert (grep.flag("-A"), grep.flag("--max-count"), grep.flag("-c")) == (
        "3",
        "2",
        "",
    )
    assert grep.flag("-l") is None and grep.operands == ("app.log",)
    awk = only("awk -F'\\t' -v n=1 '{print $2}' data.tsv")
    assert awk.values == (("-F", "\\t"), ("-v", "n=1"))
    assert awk.operands == ("{print $2}", "data.tsv")
    assert only("cut -d, -f3 a.csv").values == (("-d", ","), ("-f", "3"))
    assert only("head -n 5 f").operands == ("f",)
    assert only("sed -i.bak -n '$=' f").values == (("-i", ".bak"),)


COUNTED = [
    ("wc -l app.log", "lines"),
    ("cat app.log | wc -l", "lines"),
    ("wc -l < app.log", "lines"),
    ("grep -c '' app.log", "lines"),
    ("awk 'END {print NR}' app.log", "lines"),
    ("sed -n '$=' app.log", "lines"),
    ("cat <<EOF | wc -l\na|b\nc;d\nEOF", "lines"),
    ("find src -name '*.py' | xargs wc -l", "lines"),
    ("find src -name '*.py' -exec cat {} + | wc -l", "lines"),
    ("wc -w notes.txt", "words"),
    ("wc -c notes.txt", "bytes"),
    ("wc -m notes.txt", "chars"),
    ("grep -c ERROR app.log", "matches"),
    ("grep ERROR app.log | wc -l", "matches"),
    ("grep -o 'a|b' app.log | wc -l", "matches"),
    ("grep -vc '^#' app.log", "matches"),
    ("awk '/ERROR/{n++} END{print n}' app.log", "matches"),
    ("awk '$2 == \"ERROR\"' app.log | wc -l", "matches"),
    ("sort -u names.txt | wc -l", "distinct"),
    ("sort names.txt | uniq | wc -l", "distinct"),
    ("cut -d, -f2 a.csv | sort | uniq -c | wc -l", "distinct"),
    ("awk -F, '!seen[$2]++' a.csv | wc -l", "distinct"),
    ("find src -name '*.py' | wc -l", "files"),
    ("ls -1 src | wc -l", "files"),
    ("ls -R src | grep -c '\\.py$'", "files"),
    ("find src -name '*.py' -exec echo {} \\; | wc -l", "files"),
    ("grep -rl --include='*.py' TODO src | wc -l", "files"),
    ('echo "files: $(find src -type f | wc -l)"', "files"),
    ("bash -c 'ls src | wc -l'", "files"),
    ("awk -F, 'NR>1{s+=$4} END{print s}' sales.csv", "sum"),
    ("cut -d, -f4 sales.csv | paste -sd+ | bc", "sum"),
    ("awk -F, 'NR>1{s+=$3; n++} END{print s/n}' sales.csv", "average"),
    ("cat app.log", ""),
    ("sort app.log | uniq -c | sort -rn | head -1", ""),
    ("echo 'wc -l | grep -c x'", ""),
]


@pytest.mark.parametrize(("command", "kind"), COUNTED)
def test_what_a_command_counts(command, kind):
    assert command_counts(parse_command(command)) == kind


@pytest.mark.parametrize(
    ("command", "every"),
    [
        ("wc -l /srv/t.tsv", True),
        ("wc -l < /srv/t.tsv | tr -d ' '", True),
        ("cat /srv/a /srv/b | wc -l", True),
        ("grep -c '' /srv/t.tsv", True),
        ("sed -n '$=' /srv/t.tsv", True),
        ("awk 'END { print NR }' /srv/t.tsv", True),
        ("tail -n +2 /srv/t.tsv | wc -l", False),
        ("sed '1d' /srv/t.tsv | wc -l", False),
        ("awk 'NR > 1' /srv/t.tsv | wc -l", False),
        ("awk 'END{print NR-1}' /srv/t.tsv", False),
        ("grep -v '^#' /srv/t.tsv | wc -l", False),
        ("head -n -1 /srv/t.tsv | wc -l", False),
        ("find /srv -type f | wc -l", False),
        ("wc -w /srv/t.tsv", False),
    ],
)
def test_a_count_of_every_line_read_is_told_from_one_that_leaves_lines_out(
    command, every
):
    assert counts_every_line(parse_command(command)) is every


def test_the_count_of_a_pipeline_is_its_last_counting_stage():
    [first, second] = parse_command("wc -l a; awk '{s+=$1} END{print s}' a").pipelines
    assert (counts(first), counts(second)) == ("lines", "sum")
    assert (
        command_counts(parse_command("wc -l a; awk '{s+=$1} END{print s}' a")) == "sum"
    )


def test_the_files_a_counter_or_filter_reads():
    assert counted_files(only("wc -l a 'b c'")) == ("a", "b c")
    assert counted_files(only("wc -l")) == ()
    assert counted_files(only("grep -c ERROR a.log b.log")) == ("a.log", "b.log")
    assert counted_files(only("grep -e ERROR -c a.log")) == ("a.log",)
    assert counted_files(only("awk -v n=1 '{print}' x=2 data.txt")) == ("data.txt",)
    assert counted_files(only("sed -n '$=' f -")) == ("f",)
    assert counted_files(only("echo a.txt")) == ()


def test_the_patterns_the_filters_select_with():
    def patterns(text):
        return [p for line in parse_command(text).pipelines for p in looks_for(line)]

    assert patterns("grep -v '^#' f | grep -ci error") == ["error"]
    assert patterns("awk '$2 ~ /^ERROR$/ || $3 == \"WARN\"' f") == ["^ERROR$", "WARN"]
    assert patterns("find . -iname '*.PY' -o -path '*/tests/*'") == [
        "*.PY",
        "*/tests/*",
    ]
    assert patterns("wc -l /srv/error-count/error.log") == []


def test_a_field_test_is_told_from_a_whole_line_match():
    def tests(text):
        return any(selects_by_field(line) for line in parse_command(text).pipelines)

    assert tests("awk '$2 == \"ERROR\"' f | wc -l")
    assert tests("cut -d' ' -f2 f | grep -c ERROR")
    assert tests("grep -cE '^[^ ]+ ERROR ' f")
    assert not tests("grep -c ' ERROR ' f")
    assert not tests("grep -v '^#' f | grep -c ERROR")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "ls | wc -l; " * 900_000,  # 10 MB
        "wc -l a\x00b | grep \x00 | \x00",
        "echo 'unbalanced | wc -l",
        'grep "x | wc -l',
        "(" * 10_000 + "ls" + ")" * 10_000,
        "$(" * 5_000 + "ls" + ")" * 5_000,
        "(" * 10_000,
        "{ " * 5_000,
        "bash -c " + "'bash -c " * 200,
        "cat <<EOF | grep x | wc -l; echo y\n",
        "wc -l \ud800 | |",
        "if then fi done esac ;; && ||",
    ],
)
def test_hostile_input_returns_a_command_without_raising(text):
    command = parse_command(text)
    assert command.text == text
    assert all(
        isinstance(p.name, str) for line in command.pipelines for p in line.programs
    )
    command_counts(command)


def test_a_syntax_error_is_reported_and_what_parsed_is_still_read():
    command = parse_command("grep -c x f | wc -l; echo 'unterminated")
    assert command.error
    assert stages("grep -c x f | wc -l; echo 'unterminated")[0] == ["grep", "wc"]
    assert not parse_command("grep -c x f | wc -l").error
    nested = parse_command("(" * 10_000 + "wc -l f" + ")" * 10_000)
    assert nested.error and nested.pipelines == ()


def test_the_validators_rules_read_the_parsed_command():
    from roles.claims.name_patterns import loose_pattern
    from roles.claims.unterminated import counted_file

    assert loose_pattern("ls -R src | grep .py | wc -l") == ".py"
    assert loose_pattern("ls -R src | grep -c '\\.py$'") == ""
    assert loose_pattern("grep -c .py files.txt") == ""
    assert counted_file("wc -l '/d/my guests.txt'") == "/d/my guests.txt"
    assert counted_file("cat /d/a.txt | wc -l") == "/d/a.txt"
    assert counted_file("wc -l /d/a.txt /d/b.txt") == ""
    assert counted_file("grep -c '' /d/a.txt") == ""
