"""Does the Goal Gradient Solver beat plain retry? The control benchmark.

    python bench/control.py [--strategies ggs,retry,single,warming]
                            [--only a,b | --quick]
                            [--suite tuning|held-out|all] [--passes 2]
                            [--memory-off] [--one-account]
                            [--base-url URL --model NAME] [--seed 42]
                            [--jobs 1] [--resume SESSION|latest]

Starts the local model (``make model``; or uses ``--base-url``/``--model``, any
OpenAI-compatible endpoint, key from ``OPENAI_API_KEY``) and a private cluster
of real processes, then runs every scenario of ``bench/scenarios.py`` (the
tuning set and the held-out set, or the one ``--suite`` names) under
each control strategy at temperature 0 with a fixed seed: one run at a time, or
``--jobs N`` at once (the local model then decodes N requests at once, in slots
of their own; each run's time budget, Ω's clock, and the driver's time-out grow
N times, so that sharing the model costs no run a round).
Each (strategy, scenario) has a user of its own, so its runs read only their
own memory and history; with ``--one-account`` each strategy has one user, who
runs its scenarios in a row, as a person's unrelated tasks come. Each run gets
a freshly prepared directory at the same path under every strategy, so a
scenario's first round sees the same request whatever the strategy, and the
strategies differ only in what they do after it. With
``--passes 2`` the suite runs again over the same memory after a Dreamer pass,
and the change in rounds and tokens is printed per strategy and class. With
``--memory-off`` pass 2 also runs each (strategy, scenario) under a user of its
own that remembers nothing (the memory=off arm), and the report sets pass 2
with memory against it: what memory made worse, and what it made better.

Prints a table per strategy (the tuning and held-out sets apart), the
GGS-against-retry line and every run id;
writes ``control.md``, ``control.svg`` and ``control.json`` under
``<data dir>/results/<session>/`` and stores the record in the cluster's
database, whose Benchmarks page shows the latest one with links to its runs
(``ARTOO_DATA_DIR=<data dir> make run``). The data dir defaults to
``$ARTOO_DATA_DIR/bench-control``, else ``~/.local/share/artoo/bench-control``
(outside the checkout, so a new work tree keeps it), and keeps every session's
runs; memory is new for each session.

A session is saved after every run (``bench/control_state.py``): one stopped by
SIGTERM, a reboot or the end of a working day goes on with ``--resume SESSION``
(or ``--resume latest``), which runs only what is missing, on the same database
and memory, and again the run that was cut off (the cut-off run is cancelled;
a first-pass one runs again under a new user, since R1 reads a user's last
runs and the cut-off one would be among them).
It refuses when the code a run goes through has changed since the session began.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import sqlite3
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from artoo_web.charts import benchmark_chart  # noqa: E402
from bench import control_state  # noqa: E402
from bench.control_report import Result, build_record, render  # noqa: E402
from bench.control_state import (  # noqa: E402
    SessionState,
    StateError,
    key_of,
    parse_key,
    user_of,
)
from bench.modelcost import session_table  # noqa: E402
from bench.scenarios import SUITE_CHOICES, Scenario, select  # noqa: E402
from devtools.apiclient import Api, Db, wait_for  # noqa: E402
from devtools.cluster import Cluster  # noqa: E402
from devtools.driver import OPERATOR, TASK_TIMEOUT_S, drive  # noqa: E402
from devtools.localmodel import CLUSTER_ENV, LocalModel, LocalModelMissing  # noqa: E402
from devtools.tasks import (  # noqa: E402
    Unavailable,
    is_false_accept,
    is_solved,
    prepare_dir,
)
from roles.ggs.control import NAMES  # noqa: E402
from roles.tools.sandbox import remove_tree  # noqa: E402

TASKS_HOME = Path("/var/tmp/artoo-bench-control")
# A run's workspace: its user's and its own id, different under every strategy.
OWN_WORKSPACE = re.compile(r"/workspace/user-\d+/[0-9a-f-]{32,36}")
DREAM_TIMEOUT_S = 1800
SETTLE_TIMEOUT_S = 300
READY_TIMEOUT_S = 300
# Only the Dreamer pass between passes may change memory's rules.
NEVER_S = str(30 * 86400)
# A resumed session finds its users and gives them new tokens.
TOKENS_CODE = """
import json
from django.contrib.auth import get_user_model
from artoo_web import api_tokens
User = get_user_model()
tokens = {}
for name in json.loads(%r):
    user = User.objects.filter(username=name).first() or User.objects.create_user(name)
    tokens[name] = api_tokens.create(user, "bench")[1]
print("TOKENS " + json.dumps(tokens))
"""
# What a resumed session takes from its saved options, not from the command line.
SESSION_OPTIONS = (
    "strategies",
    "only",
    "suite",
    "quick",
    "passes",
    "memory_off",
    "one_account",
    "seed",
    "jobs",
    "tasks_dir",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/control.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--strategies", default=None)
    parser.add_argument("--only", default=None, help="scenario names, comma-separated")
    parser.add_argument("--quick", action="store_true", default=None)
    parser.add_argument(
        "--suite",
        default=None,
        choices=SUITE_CHOICES,
        help="the tuning set, the held-out set or both (all, the default)",
    )
    parser.add_argument("--passes", type=int, default=None, choices=(1, 2, 3))
    parser.add_argument(
        "--memory-off",
        action="store_true",
        default=None,
        help="pass 2 also runs under users that remember nothing (needs --passes 2)",
    )
    parser.add_argument(
        "--one-account",
        action="store_true",
        default=None,
        help="one user per strategy runs every scenario in a row",
    )
    parser.add_argument("--base-url", default="", help="an OpenAI-compatible API")
    parser.add_argument("--model", default="", help="the model name at --base-url")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--jobs", type=int, default=None, help="runs at once (1-4)", choices=range(1, 5)
    )
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--tasks-dir", type=Path, default=None)
    parser.add_argument(
        "--resume",
        default="",
        metavar="SESSION",
        help="go on with a saved session ('latest': the newest unfinished one)",
    )
    parser.add_argument(
        "--report",
        default="",
        metavar="SESSION",
        help="print and write the table of a saved session's finished runs",
    )
    parser.add_argument(
        "--archive",
        default="",
        metavar="SESSION",
        help="write a stopped session (state, memory, database) to --to FILE",
    )
    parser.add_argument("--to", type=Path, help="the archive --archive writes")
    parser.add_argument(
        "--unpack",
        type=Path,
        metavar="FILE",
        help="unpack a session archive into a new --data-dir, then --resume it",
    )
    opts = parser.parse_args(argv)
    if sum(map(bool, (opts.report, opts.resume, opts.archive, opts.unpack))) > 1:
        parser.error("--report, --resume, --archive and --unpack go one at a time")
    opts.resume = opts.resume or opts.report
    default = os.environ.get("ARTOO_DATA_DIR")
    home = Path(default) if default else Path.home() / ".local/share/artoo"
    opts.data_dir = (opts.data_dir or home / "bench-control").resolve()
    if opts.archive or opts.unpack:
        return opts
    if bool(opts.base_url) != bool(opts.model):
        parser.error("--base-url and --model go together")
    if opts.resume:
        given = [n for n in SESSION_OPTIONS if getattr(opts, n) is not None]
        if given:
            names = ", ".join("--" + n.replace("_", "-") for n in given)
            parser.error(f"a saved session keeps its own options; drop {names}")
        try:
            state = SessionState.load(opts.data_dir, opts.resume)
        except StateError as exc:
            parser.error(str(exc))
        opts.state = state
        saved = state.options
        opts.resume = state.session
        opts.strategies, opts.only = ",".join(saved["strategies"]), saved["only"]
        # Sessions saved before the held-out set named tuning scenarios only.
        opts.suite = saved.get("suite", "all")
        opts.quick, opts.passes, opts.seed = False, saved["passes"], saved["seed"]
        opts.memory_off = saved.get("memory_off", False)
        opts.one_account = saved.get("one_account", False)
        opts.jobs, opts.tasks_dir = saved["jobs"], Path(saved["tasks_dir"])
    else:
        opts.state = None
    for name, value in (
        ("strategies", ",".join(NAMES)),
        ("only", ""),
        ("suite", "all"),
        ("quick", False),
        ("passes", 1),
        ("memory_off", False),
        ("one_account", False),
        ("seed", 42),
        ("jobs", 1),
        ("tasks_dir", TASKS_HOME),
    ):
        if getattr(opts, name) is None:
            setattr(opts, name, value)
    if opts.memory_off and opts.passes < 2:
        parser.error("--memory-off is an arm of pass 2: give --passes 2 or 3")
    if opts.one_account and opts.jobs > 1:
        parser.error("--one-account runs a strategy's scenarios in a row: --jobs 1")
    opts.strategies = [s.strip() for s in opts.strategies.split(",") if s.strip()]
    unknown = [s for s in opts.strategies if s not in NAMES]
    if unknown or not opts.strategies:
        parser.error(f"--strategies takes some of {', '.join(NAMES)}")
    try:
        opts.scenarios = select(opts.only, opts.quick, opts.suite)
    except ValueError as exc:
        parser.error(str(exc))
    return opts


def saved_options(opts: argparse.Namespace) -> dict:
    """Return what a resumed session needs to run the same suite."""
    return {
        "strategies": opts.strategies,
        "only": ",".join(s.name for s in opts.scenarios),
        "suite": opts.suite,
        "passes": opts.passes,
        "memory_off": opts.memory_off,
        "one_account": opts.one_account,
        "seed": opts.seed,
        "jobs": opts.jobs,
        "tasks_dir": str(opts.tasks_dir),
    }


def endpoint_env(opts: argparse.Namespace) -> dict[str, str]:
    """Return the variables that point the cluster at ``--base-url``."""
    return {
        "OPENAI_BASE_URL": opts.base_url,
        "OPENAI_MODEL": opts.model,
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "none"),
    }


class StopRequest:
    """SIGTERM asks the bench to stop after the runs in progress (the report of
    the runs done is still written); a second SIGTERM stops it at once. A bench
    started in the background of a shell ignores SIGINT, so ``kill PID`` is how
    to end it early."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> StopRequest:
        signal.signal(signal.SIGTERM, self._on_term)
        return self

    def _on_term(self, signum: int, _frame: object) -> None:
        if self.requested:
            raise SystemExit(128 + signum)
        self.requested = True
        say("SIGTERM: stopping after the runs in progress (again to stop now)")


class Bench:
    """One session: a cluster, its users, the task directories and the results."""

    def __init__(
        self,
        opts: argparse.Namespace,
        cluster: Cluster,
        root: Path,
        state: SessionState | None = None,
        model: LocalModel | None = None,
    ):
        self.opts = opts
        # Restarted before every run (one at a time): see fresh_model().
        self.model = model if opts.jobs == 1 else None
        self.cluster = cluster
        self.db = Db(cluster)
        self.root = root
        self.state = state
        self.results: list[Result] = state.results() if state else []
        self.lock = threading.Lock()
        self.dreams: list[str] = list(state.data["dreams"]) if state else []
        # A scenario's directory is the same under every strategy: one run at a time.
        self.dir_locks = {c.name: threading.Lock() for c in opts.scenarios}
        # Runs a stop cut off (by key), which a resumed session runs again.
        self.cut_off: dict[str, str] = {}
        self.machine = control_state.this_machine()
        # Keys of cut-off runs that run again under a new user.
        self.new_users: set[str] = set()
        arms = (True, False) if opts.memory_off else (True,)
        pairs = [
            (s, c.name, m)
            for m in arms
            for s in opts.strategies
            for c in opts.scenarios
        ]
        self.apis = self.make_users(pairs)
        self.stop = StopRequest()

    def user_name(self, strategy: str, scenario: str, memory: bool = True) -> str:
        if self.state:
            return self.state.user(strategy, scenario, memory)
        return user_of(
            self.opts.session, strategy, scenario, memory, self.opts.one_account
        )

    def make_users(
        self, pairs: list[tuple[str, str, bool]]
    ) -> dict[tuple[str, str, bool], Api]:
        """Create (or find) the users of ``pairs`` of (strategy, scenario,
        memory) and a token for each, in one command."""
        names = [self.user_name(s, c, m) for s, c, m in pairs]
        out = self.cluster.manage("shell", "-c", TOKENS_CODE % json.dumps(names))
        line = next(x for x in out.stdout.splitlines() if x.startswith("TOKENS "))
        tokens = json.loads(line.removeprefix("TOKENS "))
        return {
            pair: Api(self.cluster.url, tokens[name])
            for pair, name in zip(pairs, names, strict=True)
        }

    def run(self, result: Result, scenario: Scenario) -> None:
        """Run ``scenario`` as ``result`` says on a fresh directory; judge it."""
        task, strategy = scenario.task, result.strategy
        task_dir = self.root / scenario.name
        remove_tree(task_dir)
        prepare_dir(task, task_dir)
        self.fresh_model()
        api = self.apis[(strategy, scenario.name, result.memory)]
        result.run_id = api.submit(task.request(task_dir), control=strategy)
        if self.state:
            with self.lock:
                self.state.started(result)
        watched = task_dir / task.watch if task.watch else None
        out = drive(
            api,
            self.db,
            result.run_id,
            decision=task.approvals,
            watched=watched,
            timeout_s=TASK_TIMEOUT_S * self.opts.jobs,
        )
        # Digits of the session's path must not pass for an answer.
        verdict = task.verify(
            task_dir, out.final_text.replace(str(self.root), "<root>")
        )
        result.solved = is_solved(task, verdict, out.directive, out.next_moves)
        result.false_accept = is_false_accept(verdict, out.directive)
        result.directive, result.status = out.directive, out.status
        result.path = out.path
        result.rounds, result.wall_s = out.rounds, round(out.wall_s, 1)
        result.prompt_tokens = out.prompt_tokens
        result.completion_tokens = out.completion_tokens
        result.note = verdict.note + ("; cancelled" if out.cancelled else "")
        result.recalled = out.recalled
        result.machine = self.machine

    def fresh_model(self) -> None:
        """Restart the local model, once the last run's messages are handled.

        At temperature 0 a reply still depends on what the server's prompt
        cache held (the same R2 prompt, 562 of its tokens cached in one run and
        688 in the next, gave two different plans), so without this the first
        strategy to run a scenario got another round 1 than the ones after it.
        On a fresh server every run gets the replies any other run of the same
        prompts gets, and pays the same cold cache.
        """
        if self.model is None:
            return
        wait_for(
            lambda: self.db.undelivered() == 0,
            SETTLE_TIMEOUT_S,
            interval=0.5,
            what="every bus message delivered",
        )
        self.model.restart()

    def attempt(
        self, scenario: Scenario, strategy: str, pass_no: int, memory: bool = True
    ) -> Result:
        """Run one scenario; a run that never ends is recorded, not fatal."""
        result = Result(
            scenario.name,
            scenario.expect,
            scenario.failure,
            scenario.group,
            strategy,
            pass_no,
            note="the run did not finish",
            suite=scenario.suite,
            memory=memory,
        )
        with self.lock:
            self.results.append(result)
        try:
            with self.dir_locks[scenario.name]:
                self.run(result, scenario)
        except (AssertionError, OSError) as exc:
            # The run stays unsolved in the table with what went wrong.
            result.note = f"{result.note}: {exc}"
        key = key_of(scenario.name, strategy, pass_no, memory)
        earlier = self.cut_off.get(key)
        if earlier and key in self.new_users:
            result.note += f"; run again under a new user: {earlier} was cut off"
        elif earlier:
            # A later pass keeps its user, whose history and memory hold the
            # cut-off run as far as it got.
            result.note += f"; run again: {earlier} was cut off, its user saw it"
        if self.state:
            with self.lock:
                self.state.finished(result)
        return result

    def dream(self) -> str:
        """Wait until memory has every Megram, then run one Dreamer pass."""
        wait_for(
            lambda: self.db.undelivered() == 0,
            SETTLE_TIMEOUT_S,
            interval=1,
            what="every bus message delivered",
        )
        done = self.cluster.manage(
            "memory",
            "dream",
            *("--timeout", str(DREAM_TIMEOUT_S)),
            check=False,
            timeout=DREAM_TIMEOUT_S + 60,
        )
        return (done.stdout + done.stderr).strip()

    def run_suite(self) -> None:
        """Run each pass's missing runs, with a Dreamer pass before passes 2 on;
        the memory=off arm runs after pass 2 (its users have nothing to dream)."""
        opts = self.opts
        for pass_no in range(1, opts.passes + 1):
            runs = self.missing(pass_no)
            if pass_no > len(self.dreams) + 1 and runs and not self.stop.requested:
                report = self.dream()
                self.dreams.append(report)
                if self.state:
                    self.state.dreamt(report)
                say(f"Dreamer pass before pass {pass_no}: {report}")
            self.run_all(runs)
            if pass_no == 2 and opts.memory_off and not self.stop.requested:
                self.run_all(self.missing(pass_no, memory=False))
            if self.stop.requested:
                return

    def missing(
        self, pass_no: int, memory: bool = True
    ) -> list[tuple[Scenario, str, int, bool]]:
        """Return the runs of ``pass_no`` (and arm) not done yet, in run order."""
        return [
            (c, s, pass_no, memory)
            for i, c in enumerate(self.opts.scenarios)
            for s in rotated(self.opts.strategies, i)
            if not self.is_done(c.name, s, pass_no, memory)
        ]

    def is_done(
        self, scenario: str, strategy: str, pass_no: int, memory: bool = True
    ) -> bool:
        return self.state is not None and self.state.is_done(
            scenario, strategy, pass_no, memory
        )

    def run_all(self, runs: list[tuple[Scenario, str, int, bool]]) -> None:
        """Run ``runs`` (``--jobs`` at once), starting none once a stop is asked."""

        def one(scenario: Scenario, strategy: str, pass_no: int, memory: bool) -> None:
            if not self.stop.requested:
                result = self.attempt(scenario, strategy, pass_no, memory)
                say(progress(result, self.cluster.url, self.opts.passes))

        if self.opts.jobs == 1:
            for run in runs:
                one(*run)
            return
        pool = ThreadPoolExecutor(self.opts.jobs, thread_name_prefix="run")
        try:
            # list() waits for every run and re-raises what one raised.
            list(pool.map(lambda run: one(*run), runs))
        finally:
            # A second SIGTERM leaves the runs in progress to the cluster's end.
            pool.shutdown(wait=False, cancel_futures=True)


def rotated(strategies: list[str], n: int) -> list[str]:
    """Return ``strategies`` starting at the ``n``-th (modulo their number).

    Round 1 is the same request under every strategy, so the model's prompt
    cache serves the second and third strategy much of what the first paid
    for: rotating who goes first, scenario by scenario, spreads that cost."""
    n %= len(strategies)
    return strategies[n:] + strategies[:n]


SAY = threading.Lock()


def say(text: str) -> None:
    with SAY:
        print(f"[control] {text}", flush=True)


def progress(r: Result, url: str, passes: int) -> str:
    return (
        f"pass {r.pass_no}/{passes}{'' if r.memory else ' memory-off'} "
        f"{r.strategy} {r.scenario}: solved={'yes' if r.solved else 'no'} "
        f"false_accept={'YES' if r.false_accept else 'no'} directive={r.directive} "
        f"rounds={r.rounds} tokens={r.tokens} wall={r.wall_s:.0f}s "
        f"run={r.run_id} {url}/runs/{r.run_id}/\n[control]   {r.note}"
    )


def check_available(scenarios: list[Scenario], root: Path) -> None:
    """Prepare every scenario once; exit naming any this machine cannot hold."""
    missing = []
    for scenario in scenarios:
        try:
            prepare_dir(scenario.task, root / "check" / scenario.name)
        except Unavailable as exc:
            missing.append(f"{scenario.name}: {exc}")
    remove_tree(root / "check")
    if missing:
        raise SystemExit(
            "scenarios this machine cannot hold (leave them out with --only):\n  "
            + "\n  ".join(missing)
        )


def make_root(tasks_dir: Path, session: str) -> Path:
    """Return this session's directory of task dirs, readable by the sandbox."""
    tasks_dir.mkdir(parents=True, exist_ok=True)
    tasks_dir.chmod(0o755)
    root = tasks_dir / session
    root.mkdir(exist_ok=True)
    root.chmod(0o755)
    return root


def cluster_env(opts, model_env: dict[str, str], root: Path) -> dict[str, str]:
    env = {**model_env, **CLUSTER_ENV}
    # N runs share the model: each call waits about N times as long.
    for name in (
        "ARTOO_TIME_BUDGET_S",
        "ARTOO_RUN_DEADLINE_S",
        "ARTOO_FANIN_DEADLINE_S",
        "ARTOO_LLM_TIMEOUT_S",
    ):
        if env.get(name):
            env[name] = str(int(env[name]) * opts.jobs)
    return {
        **env,
        "ARTOO_ALLOWED_PATHS": str(root),
        "ARTOO_MEMORY_PATH": str(opts.data_dir / "memory" / opts.session),
        "ARTOO_DREAM_EVERY_S": NEVER_S,
        "ARTOO_LLM_TEMPERATURE": "0",
        "ARTOO_LLM_SEED": str(opts.seed),
    }


def role_costs(db: Path, results: list[Result]) -> dict[str, str]:
    """Return each strategy's model cost per role, as a Markdown table."""
    out = {}
    for strategy in dict.fromkeys(r.strategy for r in results):
        mine = [r for r in results if r.strategy == strategy and r.run_id]
        solved = {r.run_id for r in mine if r.solved}
        out[strategy] = session_table(db, solved, {r.run_id for r in mine})
    return out


def first_round_signatures(db: Path, results: list[Result]) -> dict[str, str]:
    """Return a digest of each run's first round: what the executor called and
    answered, with the run's own workspace path taken out."""
    ids = {r.run_id.replace("-", ""): r.run_id for r in results if r.run_id}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT run_id, payload FROM artoo_web_busmessage WHERE round = 0"
            " AND type = 'ExecutionResult' ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    rounds: dict[str, list] = {}
    for run_id, payload in rows:
        if run_id in ids:
            data = json.loads(payload)
            seen = [data.get("status"), data.get("output"), data.get("tool_calls")]
            rounds.setdefault(ids[run_id], []).append(seen)
    return {
        run_id: hashlib.sha256(
            OWN_WORKSPACE.sub("<workspace>", json.dumps(seen)).encode()
        ).hexdigest()[:12]
        for run_id, seen in rounds.items()
    }


def write_outputs(record: dict, out_dir: Path) -> dict[str, Path]:
    """Write the table, the chart and the record; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {ext: out_dir / f"control.{ext}" for ext in ("md", "svg", "json")}
    paths["md"].write_text(record.get("report") or render(record))
    paths["svg"].write_text(str(benchmark_chart(record["chart"])) + "\n")
    paths["json"].write_text(json.dumps(record, indent=1) + "\n")
    return paths


def start_session(opts: argparse.Namespace, label: str) -> SessionState:
    """Return the session to run: a new one, or the saved one checked again."""
    if opts.state is None:
        opts.session = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        return SessionState.new(opts.data_dir, opts.session, saved_options(opts), label)
    state, opts.session = opts.state, opts.state.session
    try:
        state.check_code()
        state.check_model(label)
    except StateError as exc:
        raise SystemExit(f"bench/control.py: {exc}") from None
    state.resumed(datetime.now(UTC).isoformat())
    done = len(state.data["results"])
    say(f"resuming session {opts.session}: {done} runs done")
    return state


def cancel_cut_off(bench: Bench, state: SessionState) -> dict[str, str]:
    """Cancel the runs a stop cut off, which the cluster would otherwise go on
    with; return them by key. Each is run again, and its note names it."""
    cut = state.cut_off()
    renamed = []
    for key, run_id in cut.items():
        strategy, scenario, pass_no, memory = parse_key(key)
        api = bench.apis[(strategy, scenario, memory)]
        api.post_json(f"/api/runs/{run_id}/cancel", {})
        say(f"cancelled run {run_id} ({key}), cut off when the session stopped")
        if (pass_no == 1 and not bench.opts.one_account) or not memory:
            # Its user saw nothing before it: a new one starts the same (one
            # account's user saw the scenarios before it, and keeps them).
            user = state.new_user(strategy, scenario, memory)
            say(f"{key} runs again as {user}")
            renamed.append((strategy, scenario, memory))
            bench.new_users.add(key)
    bench.apis.update(bench.make_users(renamed) if renamed else {})
    return cut


def session_meta(opts: argparse.Namespace, state: SessionState) -> dict:
    """Return the record's description of the session ``state`` keeps."""
    return {
        "name": "control",
        "title": f"artoo control bench, session {state.session}",
        "session": state.session,
        "model": state.data["model"],
        "seed": opts.seed,
        "temperature": 0,
        "strategies": opts.strategies,
        "passes": opts.passes,
        "memory_off": opts.memory_off,
        "one_account": opts.one_account,
        "jobs": opts.jobs,
        "scenarios": [
            {
                "name": s.name,
                "expect": s.expect,
                "failure": s.failure,
                "group": s.group,
                "suite": s.suite,
            }
            for s in opts.scenarios
        ],
        "commit": state.data["commit"],
        "started_at": state.data.setdefault(
            "started_at", datetime.now(UTC).isoformat()
        ),
        "resumed_at": state.data["resumed_at"],
    }


def all_runs(opts: argparse.Namespace) -> list[tuple[str, str, int, bool]]:
    """Return every run of the session: (scenario, strategy, pass, memory)."""
    arms = [(p, True) for p in range(1, opts.passes + 1)]
    if opts.memory_off:
        arms.append((2, False))
    return [
        (c.name, s, p, m)
        for p, m in arms
        for c in opts.scenarios
        for s in opts.strategies
    ]


def report_only(opts: argparse.Namespace) -> dict:
    """Write and print the record of a saved session's finished runs, without a
    cluster or a model: a session still running, or stopped, can be read."""
    state = opts.state
    meta = session_meta(opts, state)
    meta["complete"] = state.is_complete(all_runs(opts))
    meta["dreams"] = state.data["dreams"]
    meta["in_flight"] = state.cut_off()
    record, _ = finish_record(meta, state.results(), opts.data_dir)
    return record


def finish_record(
    meta: dict, results: list[Result], data_dir: Path
) -> tuple[dict, dict[str, Path]]:
    """Build the record of ``results``, write it under ``data_dir`` and print
    it; return it with the paths written."""
    record = build_record(meta, results)
    db = data_dir / "db.sqlite3"
    record["role_costs"] = role_costs(db, results) if db.exists() else {}
    record["first_rounds"] = first_round_signatures(db, results) if db.exists() else {}
    record["report"] = render(record)
    paths = write_outputs(record, data_dir / "results" / meta["session"])
    print("\n" + record["report"], flush=True)
    say(f"written: {', '.join(str(p) for p in paths.values())}")
    return record, paths


def carry(opts: argparse.Namespace) -> int:
    """Archive a stopped session, or unpack one, so that it can be resumed on
    another machine (``--resume latest --data-dir`` the same dir)."""
    try:
        if opts.archive:
            dest = opts.to or opts.data_dir / "archives" / f"{opts.archive}.tar.gz"
            say(f"written: {control_state.archive(opts.data_dir, opts.archive, dest)}")
        else:
            session = control_state.unpack(opts.unpack, opts.data_dir)
            say(
                f"session {session} unpacked into {opts.data_dir}; go on with "
                f"`python bench/control.py --resume {session} --data-dir "
                f"{opts.data_dir}`"
            )
    except StateError as exc:
        raise SystemExit(f"bench/control.py: {exc}") from None
    return 0


def run_bench(
    opts: argparse.Namespace,
    model_env: dict[str, str],
    label: str,
    model: LocalModel | None = None,
) -> dict:
    """Run the suite (or what a resumed session misses) on a cluster; write,
    store and return its record. ``model``, the local model, is restarted
    before every run when runs go one at a time."""
    state = start_session(opts, label)
    root = make_root(opts.tasks_dir, opts.session)
    check_available(opts.scenarios, root)
    meta = session_meta(opts, state)
    meta["fresh_model"] = model is not None and opts.jobs == 1
    meta["operator"] = OPERATOR
    env = cluster_env(opts, model_env, root)
    processes = ("web", "pipeline", "memory", "beat")
    with Cluster(
        opts.data_dir, processes=processes, env=env, ready_timeout=READY_TIMEOUT_S
    ) as cluster:
        say(f"cluster at {cluster.url}; data dir {opts.data_dir}; tasks in {root}")
        say(f"session {opts.session}; saved in {state.path}")
        bench = Bench(opts, cluster, root, state, model)
        bench.stop.install()
        cut = bench.cut_off = cancel_cut_off(bench, state)
        try:
            bench.run_suite()
        finally:
            meta["finished_at"] = datetime.now(UTC).isoformat()
            meta["complete"] = state.is_complete(all_runs(opts))
            state.mark_complete(meta["complete"])
            meta["cut_off"] = cut
            meta["dreams"] = bench.dreams
            record, paths = finish_record(meta, bench.results, opts.data_dir)
            stored = cluster.manage("store_benchmark", str(paths["json"]), check=False)
            say((stored.stdout + stored.stderr).strip())
    return record


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.report:
        report_only(opts)
        return 0
    if opts.archive or opts.unpack:
        return carry(opts)
    if opts.base_url:
        run_bench(opts, endpoint_env(opts), f"{opts.model} at {opts.base_url}")
        return 0
    local = LocalModel(opts.data_dir, slots=opts.jobs)
    try:
        model_env = local.start()
    except LocalModelMissing as missing:
        raise SystemExit(f"bench/control.py: {missing}") from None
    try:
        label = f"local {local.size} ({local.weights.filename})"
        run_bench(opts, model_env, label, local)
    finally:
        local.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
