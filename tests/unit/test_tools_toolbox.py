"""The Toolbox gate: GGS blocks, Law 1 approval, evidence and truncation."""

from __future__ import annotations

import shutil

import pytest

from roles.claims.evidence import parse_evidence
from roles.recoverable import namesakes
from roles.tools import ApprovalAsk, Toolbox, ToolboxConfig, ToolError, head_tail
from roles.tools.shell_hints import with_hint


class Operator:
    """Answer Law 1 asks with a fixed decision and remember them."""

    def __init__(self, decision: bool):
        self.decision = decision
        self.asks: list[ApprovalAsk] = []

    def __call__(self, ask: ApprovalAsk) -> bool:
        self.asks.append(ask)
        return self.decision


def test_specs_list_every_tool_with_a_json_schema(tmp_path):
    specs = {s.name: s for s in Toolbox(tmp_path).specs()}
    assert set(specs) == {
        "shell",
        "glob",
        "read_file",
        "read_file_lines",
        "write_file",
        "create_file",
        "apply_edit",
        "search",
        "fetch_url",
    }
    assert specs["write_file"].parameters["required"] == ["path", "content"]
    assert specs["glob"].parameters["required"] == ["pattern"]


def test_a_blocked_tool_is_removed_from_specs_and_refused(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(blocked_tools=["shell"]))
    assert "shell" not in [s.name for s in toolbox.specs()]
    with pytest.raises(
        ToolError, match="blocked by GGS: tool 'shell'.*another approach"
    ):
        toolbox.call("shell", {"command": "touch ran"})
    assert not (tmp_path / "ran").exists()


def test_a_blocked_program_is_refused_while_the_shell_stays(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(blocked_tools=["shell:wc"]))
    assert "shell" in [s.name for s in toolbox.specs()]
    with pytest.raises(
        ToolError, match="the program 'wc' was used in a subtask that failed"
    ):
        toolbox.call("shell", {"command": "touch ran; wc -l ran"})
    assert not (tmp_path / "ran").exists()
    # The refusal names what else counts lines, and that way is open.
    with pytest.raises(ToolError, match=r"grep -c '' FILE or awk 'END \{print NR\}'"):
        toolbox.call("shell", {"command": "wc -l ran"})
    result = toolbox.call(
        "shell", {"command": "printf 'a\\nb\\n' | awk 'END {print NR}'"}
    )
    assert result.split("\n")[:2] == ["[exit code 0]", "2"]


def test_a_blocked_target_is_refused_naming_the_target(tmp_path):
    toolbox = Toolbox(
        tmp_path, ToolboxConfig(blocked_targets=["touch ran", "notes.txt"])
    )
    with pytest.raises(ToolError) as err:
        toolbox.call("shell", {"command": "touch ran"})
    assert str(err.value) == (
        "blocked by GGS: command 'touch ran' failed in an earlier round "
        "— choose another approach"
    )
    with pytest.raises(ToolError, match="blocked by GGS: path 'notes.txt'"):
        toolbox.call("read_file", {"path": "notes.txt"})
    assert not (tmp_path / "ran").exists()
    assert toolbox.call("shell", {"command": "touch other"}).startswith("[exit code 0]")


def test_a_blocked_glob_is_refused_by_its_pattern_under_its_root(tmp_path):
    (tmp_path / "conf").mkdir()
    toolbox = Toolbox(tmp_path, ToolboxConfig(blocked_targets=["conf/*.ini"]))
    with pytest.raises(ToolError, match="blocked by GGS: 'conf/\\*.ini'"):
        toolbox.call("glob", {"pattern": "*.ini", "root": "conf"})
    # The same pattern elsewhere is another input.
    assert "ERROR" not in toolbox.call("glob", {"pattern": "*.ini"})


def test_refused_calls_are_recorded_as_evidence(tmp_path):
    toolbox = Toolbox(tmp_path, ToolboxConfig(blocked_tools=["search"]))
    with pytest.raises(ToolError):
        toolbox.call("search", {"query": "weather"})
    call = parse_evidence(toolbox.evidence[0])
    assert (call.tool, call.target) == ("search", "weather")
    assert call.output.startswith("ERROR: blocked by GGS")


def test_unknown_tools_and_missing_arguments_are_clear_errors(tmp_path):
    toolbox = Toolbox(tmp_path)
    with pytest.raises(ToolError, match="unknown tool 'mdfind'"):
        toolbox.call("mdfind", {"query": "x"})
    with pytest.raises(ToolError, match="shell needs a string argument 'command'"):
        toolbox.call("shell", {"cmd": "ls"})
    with pytest.raises(ToolError, match="write_file needs a string argument 'content'"):
        toolbox.call("write_file", {"path": "a.txt", "content": 3})


def test_rm_never_runs_when_the_operator_denies(tmp_path):
    (tmp_path / "x").write_text("keep me")
    operator = Operator(False)
    toolbox = Toolbox(tmp_path, approve=operator)
    output = toolbox.call("shell", {"command": "rm -rf x"})
    assert (tmp_path / "x").read_text() == "keep me"
    assert output == "[LAW1] rm deletes files permanently — denied by the operator"
    assert operator.asks == [
        ApprovalAsk(
            "shell", "rm -rf x", {"command": "rm -rf x"}, "rm deletes files permanently"
        )
    ]
    assert toolbox.evidence == [
        'shell: {"command": "rm -rf x"} → [LAW1] rm deletes files permanently '
        "— denied by the operator"
    ]


def test_rm_never_runs_without_an_approve_callback(tmp_path):
    (tmp_path / "x").write_text("keep me")
    output = Toolbox(tmp_path).call("shell", {"command": "rm -rf x"})
    assert output.startswith("[LAW1]") and (tmp_path / "x").exists()


def test_an_approved_gated_command_runs(tmp_path):
    (tmp_path / "x").write_text("bye")
    operator = Operator(True)
    output = Toolbox(tmp_path, approve=operator).call("shell", {"command": "rm -rf x"})
    assert output == "[exit code 0]\n"
    assert not (tmp_path / "x").exists()
    assert [ask.gate for ask in operator.asks] == ["law1"]


def test_harmless_commands_are_not_put_to_the_operator(tmp_path):
    operator = Operator(False)
    Toolbox(tmp_path, approve=operator).call("shell", {"command": "echo hi > new.txt"})
    assert operator.asks == [] and (tmp_path / "new.txt").read_text() == "hi\n"


def test_overwriting_a_file_with_write_file_asks_first(tmp_path):
    (tmp_path / "plan.md").write_text("original")
    operator = Operator(False)
    toolbox = Toolbox(tmp_path, approve=operator)
    output = toolbox.call("write_file", {"path": "plan.md", "content": "new"})
    assert output.startswith("[LAW1] write_file would overwrite existing file")
    assert output.endswith("— denied by the operator")
    assert (tmp_path / "plan.md").read_text() == "original"
    assert operator.asks[0].command == f"write_file {tmp_path.resolve() / 'plan.md'}"
    operator.decision = True
    toolbox.call("write_file", {"path": "plan.md", "content": "new"})
    assert (tmp_path / "plan.md").read_text() == "new"


def test_a_file_the_toolbox_made_itself_is_rewritten_without_asking(tmp_path):
    operator = Operator(False)
    toolbox = Toolbox(tmp_path, approve=operator)
    toolbox.call("write_file", {"path": "hello.py", "content": "hello"})
    toolbox.call("write_file", {"path": "hello.py", "content": "print('hello')"})
    assert operator.asks == []
    assert (tmp_path / "hello.py").read_text() == "print('hello')"
    # Another subtask's toolbox did not make it: the file existed before it.
    output = Toolbox(tmp_path, approve=operator).call(
        "write_file", {"path": "hello.py", "content": "x"}
    )
    assert output.startswith("[LAW1] write_file would overwrite existing file")


def test_every_call_appends_its_canonical_evidence_entry(tmp_path):
    toolbox = Toolbox(tmp_path)
    toolbox.call("write_file", {"path": "a.txt", "content": "alpha"})
    toolbox.call("shell", {"command": "cat a.txt"})
    assert (
        toolbox.evidence[1] == 'shell: {"command": "cat a.txt"} → [exit code 0]\nalpha'
    )
    assert [parse_evidence(e).tool for e in toolbox.evidence] == ["write_file", "shell"]


def test_the_model_sees_head_and_tail_truncated_at_4000_chars(tmp_path):
    text = "h" * 1333 + "m" * 5000 + "t" * 2667
    (tmp_path / "long.txt").write_text(text)
    shown = Toolbox(tmp_path).call("read_file", {"path": "long.txt"})
    assert shown == "h" * 1333 + "\n...[middle truncated]...\n" + "t" * 2667


def test_head_tail_leaves_short_text_alone():
    assert head_tail("short", 10) == "short"


def test_a_missing_workspace_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="is not a directory"):
        Toolbox(tmp_path / "nope")


def misplaced(tmp_path):
    (tmp_path / "conf" / "deep").mkdir(parents=True)
    (tmp_path / "conf" / "settings.ini").write_text("port = 8437\n")
    (tmp_path / "conf" / "deep" / "settings.ini").write_text("port = 1\n")
    return tmp_path / "settings.ini"


def test_a_missing_file_names_files_of_its_name_nearby(tmp_path):
    toolbox = Toolbox(tmp_path)
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": str(misplaced(tmp_path))})
    assert str(err.value) == (
        f"no such file: {tmp_path / 'settings.ini'}; files named 'settings.ini' "
        f"under {tmp_path}: conf/settings.ini, conf/deep/settings.ini"
    )
    with pytest.raises(ToolError, match="no file named 'other.ini' under"):
        toolbox.call("read_file", {"path": "nowhere/other.ini"})
    assert parse_evidence(toolbox.evidence[0]).output.startswith("ERROR: no such")


def test_a_missing_file_names_the_files_of_its_stem_with_another_extension(tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "config.yml").write_text("max_connections: 140\n")
    (tmp_path / "db" / "Config.json").write_text("{}\n")
    (tmp_path / "db" / "configure.sh").write_text("true\n")
    toolbox = Toolbox(tmp_path)
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": "db/config.yaml"})
    assert str(err.value) == (
        f"no such file: {tmp_path / 'db' / 'config.yaml'} (no file named "
        f"'config.yaml' under {tmp_path / 'db'}; files of the same name with "
        "another extension: db/Config.json, db/config.yml)"
    )
    # R4a reads the names off the evidence entry (roles.recoverable).
    assert namesakes(toolbox.evidence) == (
        "db/config.yaml",
        "db/Config.json, db/config.yml",
    )
    work = tmp_path / "work"
    work.mkdir()
    hidden = Toolbox(
        work, ToolboxConfig(allowed_paths=[tmp_path], hidden_paths=[tmp_path / "db"])
    )
    with pytest.raises(ToolError) as err:
        hidden.call("read_file", {"path": str(tmp_path / "config.yaml")})
    assert "config.yml" not in str(err.value) and "no file named" in str(err.value)


def test_a_blocked_missing_file_is_refused_and_still_names_its_namesakes(tmp_path):
    missing = str(misplaced(tmp_path))
    toolbox = Toolbox(tmp_path, ToolboxConfig(blocked_targets=[missing]))
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": missing})
    assert str(err.value).startswith(f"blocked by GGS: path {missing!r}")
    assert str(err.value).endswith(
        "under " + f"{tmp_path}: conf/settings.ini, conf/deep/settings.ini"
    )
    shown = Toolbox(tmp_path, ToolboxConfig(blocked_targets=["conf/settings.ini"]))
    with pytest.raises(ToolError) as err:
        shown.call("read_file", {"path": "conf/settings.ini"})
    assert "files named" not in str(err.value)


def test_namesakes_outside_the_roots_or_in_hidden_paths_are_never_named(tmp_path):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    (data / "x").mkdir(parents=True)
    (data / "x" / "secrets.env").write_text("KEY=1")
    toolbox = Toolbox(
        work, ToolboxConfig(allowed_paths=[tmp_path], hidden_paths=[data])
    )
    with pytest.raises(ToolError) as err:
        toolbox.call("read_file", {"path": str(tmp_path / "secrets.env")})
    assert "data" not in str(err.value) and "no file named" in str(err.value)
    outside = Toolbox(work)
    with pytest.raises(ToolError) as err:
        outside.call("read_file", {"path": "missing.env"})
    missing = work / "missing.env"
    assert str(err.value) == (
        f"no such file: {missing} (no file named 'missing.env' under {work}; "
        f"to find the file that holds a word: grep -rln missing {work})"
    )


def test_a_command_that_is_not_installed_is_answered_with_what_to_use(tmp_path):
    said = Toolbox(tmp_path).call("shell", {"command": "xsv count data.csv"})
    assert said.startswith("[exit code 127]\n")
    assert said.endswith(
        "[xsv is not installed here: do the same with standard tools (awk, sed, "
        "cut, sort, wc, grep) or python3; change a file with the apply_edit tool]"
    )
    # Without the file tool offered, it is not named.
    bare = with_hint("[exit code 127]\nbash: line 1: nano: command not found\n")
    assert bare.endswith("or python3]")
    plain = Toolbox(tmp_path).call("shell", {"command": "echo 'x: command not found'"})
    assert plain == "[exit code 0]\nx: command not found\n"


def test_a_tool_called_through_the_shell_is_answered_with_the_tool_to_call(tmp_path):
    # Seen with a 1.5B executor: `mcp__notes__count_lines FILE` in the shell,
    # told only that it was not installed, counted with wc instead.
    said = Toolbox(tmp_path).call("shell", {"command": "read_file notes.txt"})
    assert said.startswith("[exit code 127]\n")
    assert said.endswith(
        "[read_file is one of your tools, not a program: call the tool read_file "
        "itself, not through the shell (its arguments: path)]"
    )
    mcp = "mcp__notes__count_lines"
    hinted = with_hint(
        f"[exit code 127]\nbash: line 1: {mcp}: command not found\n",
        f"{mcp} /srv/notes/todo.txt",
        {mcp: ["path"]},
    )
    assert hinted.endswith(f"call the tool {mcp} itself, not through the shell "
                           "(its arguments: path)]")  # fmt: skip
    # A tool GGS blocked is not offered, so it is not named either.
    blocked = Toolbox(tmp_path, ToolboxConfig(blocked_tools=["read_file"]))
    said = blocked.call("shell", {"command": "read_file notes.txt"})
    assert "is not installed here" in said and "one of your tools" not in said


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_silenced_fetch_piped_into_a_program_that_printed_nothing_gets_a_hint(
    tmp_path,
):
    # unreachable-url: "curl -s URL | awk … | sort | head" exited 0 with no
    # output, and the executor went on as if the price list were empty.
    dead = "http://127.0.0.1:9/exports/prices.csv"
    said = Toolbox(tmp_path).call(
        "shell", {"command": f"curl -s {dead} | awk -F, '{{print $2}}' | head -n 1"}
    )
    assert said == (
        "[exit code 0]\n[the pipeline printed nothing, and its exit code is its "
        "last program's: curl -s hides its own errors, so it may have fetched "
        "nothing; run curl alone without -s to see whether it reached the server]"
    )
    shown = Toolbox(tmp_path).call("shell", {"command": f"curl -sS {dead} | wc -c"})
    assert "[the pipeline printed nothing" not in shown
    quiet = Toolbox(tmp_path).call("shell", {"command": "printf '' | wc -c | head"})
    assert quiet == "[exit code 0]\n0\n"


def test_a_script_that_holds_its_output_instead_of_code_gets_a_hint(tmp_path):
    toolbox = Toolbox(tmp_path)
    toolbox.call("shell", {"command": "echo 'hello from artoo' > hello.py"})
    said = toolbox.call("shell", {"command": "python3 hello.py"})
    assert said.startswith("[exit code 1]\n")
    assert "SyntaxError" in said
    assert said.rstrip().endswith(
        "hello.py is not valid Python: a script file holds code, not the text it "
        "should print; to print a line it holds print('the line'). Write it with "
        "write_file, then run it again]"
    )
    (tmp_path / "ok.py").write_text("print('SyntaxError: in a string')\n")
    fine = toolbox.call("shell", {"command": "python3 ok.py"})
    assert fine == "[exit code 0]\nSyntaxError: in a string\n"


def test_a_variable_never_set_is_an_error_with_a_hint_not_an_empty_word(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    toolbox = Toolbox(tmp_path)
    said = toolbox.call("shell", {"command": "ls $directory; echo listed"})
    assert said.startswith("[exit code 127]\n")
    assert "directory: unbound variable" in said and "listed" not in said
    assert said.endswith(
        "[$directory is not set: each command runs in a fresh shell, so write "
        "the path or value itself in the command]"
    )
    piped = toolbox.call("shell", {"command": "find $dir -name '*.py' | wc -l"})
    assert "dir: unbound variable" in piped and "[$dir is not set" in piped
    fine = toolbox.call("shell", {"command": "d=.; find $d -name '*.py' | wc -l"})
    assert fine == "[exit code 0]\n1\n"


def test_an_awk_sum_over_a_csv_without_a_separator_names_the_comma(tmp_path):
    (tmp_path / "sales.csv").write_text("region,amount\nwest,770\nsouth,1144\n")
    toolbox = Toolbox(tmp_path)
    said = toolbox.call("shell", {"command": "awk '{s+=$2} END{print s}' sales.csv"})
    assert said.startswith("[exit code 0]\n0\n")
    assert "give the comma as the separator, awk -F," in said
    right = toolbox.call(
        "shell", {"command": "awk -F, 'NR>1{s+=$2} END{print s}' sales.csv"}
    )
    assert right == "[exit code 0]\n1914\n"


def test_a_find_name_that_holds_a_path_gets_the_forms_that_match(tmp_path):
    # renamed-file: "find DIR -name 'db/config.yaml'" exited 0 and printed
    # nothing in every round; -name compares base names only.
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "config.yaml").write_text("max_connections: 140\n")
    toolbox = Toolbox(tmp_path)
    said = toolbox.call("shell", {"command": f"find {tmp_path} -name 'db/config.yaml'"})
    assert said == (
        "[exit code 0]\n[find's -name matches a file's own name, never a path, so "
        "'db/config.yaml' matches nothing: use -name config.yaml or -path "
        "'*/db/config.yaml']"
    )
    for suggested in ("-name config.yaml", "-path '*/db/config.yaml'"):
        found = toolbox.call("shell", {"command": f"find {tmp_path} {suggested}"})
        assert found == f"[exit code 0]\n{tmp_path}/db/config.yaml\n"
    plain = toolbox.call("shell", {"command": f"find {tmp_path} -name 'nothing.txt'"})
    assert plain == "[exit code 0]\n"


def test_a_command_told_no_such_file_is_told_the_namesakes_nearby(tmp_path):
    # renamed-file: grep and find were told "No such file or directory" for
    # db/config.yaml four times; read_file would have named db/config.yml.
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "config.yml").write_text("max_connections: 140\n")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "notes.txt").write_text("max_connections lives in db\n")
    toolbox = Toolbox(tmp_path)
    stated = tmp_path / "db" / "config.yaml"
    said = toolbox.call("shell", {"command": f"grep max_connections {stated}"})
    assert said.endswith(
        f"No such file or directory\n[no such file: {stated} (no file named "
        f"'config.yaml' under {tmp_path / 'db'}; files of the same name with "
        "another extension: db/config.yml)]"
    ), said
    # R4a reads the names off the shell's evidence entry too.
    assert namesakes(toolbox.evidence) == (str(stated), "db/config.yml")
    # Nothing nearby of that name or stem: no guess from the file's contents.
    gone = tmp_path / "db" / "max_connections.txt"
    said = toolbox.call("shell", {"command": f"cat {gone} {stated}"})
    assert said.count("[no such file:") == 1 and "notes.txt" not in said
    # Relative paths depend on the command's directory: never hinted.
    said = toolbox.call("shell", {"command": "cd old && cat db/config.yaml"})
    assert "[no such file" not in said
    assert namesakes(toolbox.evidence) == ("", "")


def test_a_find_that_found_nothing_is_told_the_namesakes_under_its_directory(
    tmp_path,
):
    # renamed-file (598373e6): "find DIR -name 'config.yaml'" exited 0 and
    # printed nothing in two rounds; DIR held db/config.yml.
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "etc").mkdir(parents=True)
    (work / "etc" / "app.toml").write_text("port = 8080\n")
    (elsewhere / "etc").mkdir(parents=True)
    (elsewhere / "etc" / "app.ini").write_text("port = 1\n")
    toolbox = Toolbox(work)
    said = toolbox.call("shell", {"command": f"find {work} -name app.conf"})
    assert said == (
        f"[exit code 0]\n[find found no file named 'app.conf' under {work}; files "
        "of the same name with another extension: etc/app.toml]"
    )
    for quiet in (
        f"find {work} -name 'app.*'",  # found: printed
        f"find {work} -name 'nope*'",  # a wildcard says nothing of a stem
        f"find {work} -name app.conf | wc -l",  # the output is wc's
        f"find {elsewhere} -name app.conf",  # outside the allowed paths
        "find . -name app.conf",  # relative to the command's directory
    ):
        assert "[find found no file" not in toolbox.call("shell", {"command": quiet})


def test_no_such_file_hints_stay_inside_the_allowed_paths(tmp_path):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (elsewhere / "db").mkdir(parents=True)
    (elsewhere / "db" / "config.yml").write_text("secret: 1\n")
    work.mkdir()
    said = Toolbox(work).call(
        "shell", {"command": f"cat {elsewhere / 'db' / 'config.yaml'}"}
    )
    assert "No such file or directory" in said and "config.yml" not in said


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_silenced_fetch_that_failed_is_told_what_its_exit_code_means(tmp_path):
    # unreachable-url, retry: "curl -s URL > prices.csv" exited 7 with nothing
    # printed, and the executor claimed the list "was already downloaded".
    dead = "http://127.0.0.1:9/exports/prices.csv"
    said = Toolbox(tmp_path).call("shell", {"command": f"curl -s {dead} > p.csv"})
    assert said == (
        "[exit code 7]\n[curl's exit code 7 means it could not connect to the "
        "server: nothing was fetched, so the data must come from somewhere else]"
    )
    loud = Toolbox(tmp_path).call("shell", {"command": f"curl -sS {dead}"})
    assert "Failed to connect" in loud and "nothing was fetched" not in loud
    other = Toolbox(tmp_path).call("shell", {"command": "sh -c 'exit 7'"})
    assert other == "[exit code 7]\n"


def test_a_first_derivations_call_is_refused_as_such_in_the_second(tmp_path):
    # Not "failed in an earlier round": it worked, and another means is asked.
    toolbox = Toolbox(tmp_path, ToolboxConfig(derived_targets=["wc -l data.txt"]))
    with pytest.raises(ToolError, match="gave the first derivation of this answer"):
        toolbox.call("shell", {"command": "wc -l data.txt"})
    assert toolbox.call("shell", {"command": "echo other"}).startswith("[exit code 0]")


def test_a_question_is_not_offered_the_tools_that_edit_files():
    from roles.tools.specs import EDIT_TOOLS, not_offered

    for answer in ("count", "total", "path", "name", "names", "yes_no", "value"):
        assert set(not_offered(answer)) == set(EDIT_TOOLS)
    assert not_offered("effect") == () and not_offered("text") == ()
