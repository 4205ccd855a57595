"""The speculative-decoding bench reads llama-server's own log and compares arms."""

from __future__ import annotations

from bench.speculative import Arm, report

PREFIX = "1.02.003.004 I slot print_timing: id  0 | task 9 | "


def timing(prompt: tuple[int, float], gen: tuple[int, float]) -> list[str]:
    return [
        f"{PREFIX}prompt eval time = {prompt[1]:10.2f} ms / {prompt[0]:5d} tokens",
        f"{PREFIX}       eval time = {gen[1]:10.2f} ms / {gen[0]:5d} tokens",
    ]


def acceptance(accepted: int, drafted: int) -> str:
    return (
        "1.02.003.005 I slot print_timing: id  0 | task 9 | draft acceptance = "
        f"{accepted / drafted:.5f} ({accepted:5d} accepted / {drafted:5d} "
        "generated), mean len =  1.90"
    )


def test_an_arm_adds_up_the_servers_own_timings_and_the_drafts_acceptance():
    arm = Arm("0.5b")
    arm.read_log(
        [
            *timing((100, 1000.0), (30, 1000.0)),
            acceptance(20, 40),
            *timing((50, 500.0), (30, 500.0)),
            acceptance(10, 20),
            "1.03.000.000 W srv  something else entirely",
        ]
    )
    assert arm.speed.gen_tokens == 60
    assert arm.speed.gen_ms == 1500.0
    assert (arm.accepted, arm.drafted) == (30, 60)


def test_the_report_sets_each_arm_against_the_server_alone():
    alone, drafted = Arm("alone"), Arm("0.5b")
    alone.read_log(timing((100, 1000.0), (60, 3000.0)))
    drafted.read_log([*timing((100, 1000.0), (60, 2000.0)), acceptance(30, 60)])
    for arm, reply in ((alone, '{"a": 1}'), (drafted, '{"a": 2}')):
        arm.add("R1", '{"intent": "x"}', 4000)
        arm.add("R2", reply, 9000)
    table = report([alone, drafted])
    rows = {r.split("|")[1].strip(): r for r in table.splitlines() if "|" in r}
    assert "| 20.0 (20.0) |" in rows["alone"]
    assert "| 30.0 (30.0) |" in rows["0.5b"]
    assert "| 1.50x |" in rows["0.5b"]
    assert "| 1 of 2 |" in rows["0.5b"]
    assert "| 30 of 60 (50%) |" in rows["0.5b"]
    assert "R1 4 → 4, R2 9 → 9" in table


def test_an_arm_without_timings_is_said_to_have_none():
    alone, silent = Arm("alone"), Arm("ngram-mod")
    alone.read_log(timing((100, 1000.0), (60, 3000.0)))
    silent.add("R1", "{}", 10)
    table = report([alone, silent])
    assert "| ngram-mod | 1 | - | no timings |" in table
