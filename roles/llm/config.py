"""LLM configuration read from an environment mapping (never at import time).

Two tiers share one fallback: each ``BRAIN_*``/``TOOL_*`` key falls back on its
own to the ``OPENAI_*`` key of the same name, so one endpoint can serve both::

    OPENAI_BASE_URL=https://api.deepseek.com   OPENAI_API_KEY=sk-…
    OPENAI_MODEL=deepseek-chat                 BRAIN_MODEL=deepseek-reasoner

Tuning: ``ARTOO_LLM_TIMEOUT_S`` (read timeout, default 120), ``ARTOO_LLM_RETRIES``
(retries after the first attempt, default 4), ``ARTOO_LLM_BACKOFF_S`` (first
backoff, default 0.5), ``ARTOO_LLM_JSON_MODE`` (``on``/``off``, default on),
``ARTOO_TOOL_PROTOCOL`` (``auto``, default: discovered per endpoint;
``native``/``schema``/``json`` force one), ``ARTOO_CONTEXT_TOKENS`` (the context
window; default: asked of the endpoint), ``ARTOO_LLM_TEMPERATURE`` (0–2) and
``ARTOO_LLM_SEED`` (sampling; default: the endpoint's own), ``ARTOO_PLAN_CHAINS``
(``split``/``join``, default split: see ``roles.planning.shape``) and ``ARTOO_PRICES``
(JSON, ``{"model": {"input": usd_per_million, "output": usd_per_million}}``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

ROLE_TIERS = {
    "R1": "brain",
    "R2": "brain",
    "R4b": "brain",
    "R3": "tool",
    "R4a": "tool",
    "R5": "tool",
    # A project's agents plan and judge: the brain's work.
    "Scope": "brain",
    "TaskPlan": "brain",
    "QA": "brain",
    "Assessor": "brain",
}
TIER_PREFIXES = {"brain": "BRAIN", "tool": "TOOL"}
ENDPOINT_KEYS = ("BASE_URL", "API_KEY", "MODEL")
ToolProtocol = Literal["auto", "native", "schema", "json"]
TOOL_PROTOCOLS = ("auto", "native", "schema", "json")
PLAN_CHAINS = ("split", "join")
PLAN_STEPS = ("show", "drop")
REDERIVE = ("off", "on", "strict")


class LLMConfigError(ValueError):
    """Raised when the LLM configuration is missing or malformed; names the keys."""


@dataclass(frozen=True)
class Endpoint:
    """Where and what to call for one tier."""

    tier: str
    base_url: str
    api_key: str = field(repr=False)
    model: str


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens, per model: ``{"model": (input, output)}``."""

    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> PriceTable:
        """Parse ``ARTOO_PRICES``; raise LLMConfigError on any malformed entry."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise LLMConfigError(f"ARTOO_PRICES is not valid JSON: {err}") from None
        if not isinstance(raw, dict):
            raise LLMConfigError("ARTOO_PRICES must be a JSON object keyed by model")
        return cls({model: _price_pair(model, entry) for model, entry in raw.items()})

    def cost(
        self, model: str, prompt_tokens: int, completion_tokens: int
    ) -> float | None:
        """Return the USD cost of one call, or None when the model has no price."""
        price = self.prices.get(model)
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def _price_pair(model: str, entry: object) -> tuple[float, float]:
    if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
        raise LLMConfigError(
            f'ARTOO_PRICES[{model!r}] must be {{"input": usd, "output": usd}} '
            "(USD per million tokens)"
        )
    pair = []
    for key in ("input", "output"):
        value = entry[key]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value < 0:
            raise LLMConfigError(
                f"ARTOO_PRICES[{model!r}][{key!r}] must be a non-negative number"
            )
        pair.append(float(value))
    return pair[0], pair[1]


@dataclass(frozen=True)
class LLMSettings:
    """Transport and protocol knobs shared by every tier."""

    read_timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    json_mode: bool = True
    tool_protocol: ToolProtocol = "auto"
    prices: PriceTable = field(default_factory=PriceTable)
    cancel_poll_s: float = 0.05
    # The endpoint's context window in tokens; 0: ask the endpoint (llama.cpp's
    # /props), else send unbudgeted.
    context_tokens: int = 0
    # Sampling sent with every request; None leaves the endpoint's default.
    temperature: float | None = None
    seed: int | None = None
    # How R2's plans run: "join" runs a linear chain as one subtask
    # (roles.planning.shape); "split" keeps every plan as written.
    plan_chains: Literal["split", "join"] = "split"
    # Whether a plan of one subtask shows R2's steps beside the request it runs
    # ("show") or runs the request alone ("drop"; roles.planning.shape).
    plan_steps: Literal["show", "drop"] = "show"
    # The standard commands in R3's system prompt (roles.executor_prompts).
    cookbook: bool = True
    # A number, path or name resting on one computation is derived again by
    # another means before it passes (roles.claims.rederive): "on" fails it
    # when the two disagree, "strict" also when the second confirms nothing.
    rederive: Literal["off", "on", "strict"] = "on"
    # A correction names the step that failed and the commands to try next
    # (roles.cookbook.nudge).
    nudges: bool = True
    # The executor's temperature when it answers a correction or derives an
    # answer again; None: the same as every call's. At a greedy 0, a small
    # model repeats the command that failed word for word.
    retry_temperature: float | None = None


def tier_of(role: str) -> str:
    """Return the tier (``brain``/``tool``) that serves ``role``."""
    try:
        return ROLE_TIERS[role]
    except KeyError:
        known = ", ".join(ROLE_TIERS)
        raise LLMConfigError(
            f"unknown role {role!r}; expected one of {known}"
        ) from None


def normalise_base_url(url: str) -> str:
    """Strip trailing slashes and a pasted ``/chat/completions`` (go-artoo #35)."""
    url = url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")].rstrip("/")
    return url


def load_endpoint(tier: str, env: Mapping[str, str]) -> Endpoint:
    """Return the endpoint of ``tier``; raise LLMConfigError naming missing keys."""
    prefix = TIER_PREFIXES.get(tier)
    if prefix is None:
        raise LLMConfigError(f"unknown tier {tier!r}; expected brain or tool")
    values, missing = {}, []
    for key in ENDPOINT_KEYS:
        value = _value(env, f"{prefix}_{key}") or _value(env, f"OPENAI_{key}")
        if value:
            values[key] = value
        else:
            missing.append(f"{prefix}_{key} or OPENAI_{key}")
    if missing:
        roles = ", ".join(r for r, t in ROLE_TIERS.items() if t == tier)
        raise LLMConfigError(
            f"LLM tier {tier!r} (roles {roles}) is not configured: set "
            + "; ".join(missing)
        )
    base_url = normalise_base_url(values["BASE_URL"])
    if not base_url.startswith(("http://", "https://")):
        raise LLMConfigError(
            f"{prefix}_BASE_URL/OPENAI_BASE_URL must start with http:// or "
            f"https://, got {values['BASE_URL']!r}"
        )
    return Endpoint(tier, base_url, values["API_KEY"], values["MODEL"])


def is_configured(env: Mapping[str, str]) -> bool:
    """Return False when no LLM key is set, True when both tiers are complete.

    A partial configuration raises LLMConfigError instead of silently falling
    back to the offline model.
    """
    names = [
        f"{p}_{k}" for p in ("OPENAI", *TIER_PREFIXES.values()) for k in ENDPOINT_KEYS
    ]
    if not any(_value(env, name) for name in names):
        return False
    for tier in TIER_PREFIXES:
        load_endpoint(tier, env)
    return True


def load_settings(env: Mapping[str, str]) -> LLMSettings:
    """Return the ``ARTOO_LLM_*`` settings; raise LLMConfigError on bad values."""
    protocol = _value(env, "ARTOO_TOOL_PROTOCOL") or "auto"
    if protocol not in TOOL_PROTOCOLS:
        raise LLMConfigError(
            f"ARTOO_TOOL_PROTOCOL must be one of {', '.join(TOOL_PROTOCOLS)}, "
            f"got {protocol!r}"
        )
    prices = _value(env, "ARTOO_PRICES")
    chains = _value(env, "ARTOO_PLAN_CHAINS") or "split"
    if chains not in PLAN_CHAINS:
        raise LLMConfigError(
            f"ARTOO_PLAN_CHAINS must be one of {', '.join(PLAN_CHAINS)}, got {chains!r}"
        )
    steps = _value(env, "ARTOO_PLAN_STEPS") or "show"
    if steps not in PLAN_STEPS:
        raise LLMConfigError(
            f"ARTOO_PLAN_STEPS must be one of {', '.join(PLAN_STEPS)}, got {steps!r}"
        )
    return LLMSettings(
        read_timeout_s=_number(env, "ARTOO_LLM_TIMEOUT_S", 120.0, minimum=0.001),
        max_retries=int(_number(env, "ARTOO_LLM_RETRIES", 4, minimum=0, integer=True)),
        backoff_base_s=_number(env, "ARTOO_LLM_BACKOFF_S", 0.5, minimum=0.0),
        json_mode=_flag(env, "ARTOO_LLM_JSON_MODE", True),
        tool_protocol=protocol,  # type: ignore[arg-type]
        prices=PriceTable.from_json(prices) if prices else PriceTable(),
        context_tokens=int(
            _number(env, "ARTOO_CONTEXT_TOKENS", 0, minimum=0, integer=True)
        ),
        temperature=_optional(env, "ARTOO_LLM_TEMPERATURE", maximum=2.0),
        seed=_optional(env, "ARTOO_LLM_SEED", integer=True),
        plan_chains=chains,  # type: ignore[arg-type]
        plan_steps=steps,  # type: ignore[arg-type]
        cookbook=_flag(env, "ARTOO_COOKBOOK", True),
        rederive=_choice(env, "ARTOO_REDERIVE", REDERIVE, "on"),  # type: ignore[arg-type]
        nudges=_flag(env, "ARTOO_NUDGES", True),
        retry_temperature=_optional(env, "ARTOO_RETRY_TEMPERATURE", maximum=2.0),
    )


def _optional(
    env: Mapping[str, str], name: str, *, maximum: float = math.inf, integer=False
) -> float | int | None:
    """Return the non-negative number ``name`` holds, or None when it is unset."""
    if not _value(env, name):
        return None
    value = _number(env, name, 0, minimum=0, integer=integer)
    if value > maximum:
        raise LLMConfigError(f"{name} must be at most {maximum}, got {value!r}")
    return int(value) if integer else value


def _value(env: Mapping[str, str], name: str) -> str:
    return (env.get(name) or "").strip()


def _number(
    env: Mapping[str, str], name: str, default: float, *, minimum: float, integer=False
) -> float:
    text = _value(env, name)
    if not text:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise LLMConfigError(f"{name} must be {kind}, got {text!r}") from None
    if not math.isfinite(value) or value < minimum:
        raise LLMConfigError(f"{name} must be at least {minimum}, got {text!r}")
    return value


def _choice(
    env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str
) -> str:
    text = _value(env, name).lower() or default
    # A flag's words name the default (on) or off, as before there were more.
    text = {"true": default, "yes": default, "1": default}.get(text, text)
    text = {"false": "off", "no": "off", "0": "off"}.get(text, text)
    if text not in choices:
        raise LLMConfigError(
            f"{name} must be one of {', '.join(choices)}, got {text!r}"
        )
    return text


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    text = _value(env, name).lower()
    if not text:
        return default
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise LLMConfigError(f"{name} must be on or off, got {text!r}")
