"""Command templates: the placeholders a run's command may use, checked when a preset loads,
and filled so that no value can ever run as code.

A command is a shell-style string. Every value put in a placeholder is quoted for the shell
(`shlex.quote`), with any quote the template opened around it closed first and reopened
after, so the value reaches the program as literal text inside exactly the argument the
template wrote: `$(touch x)`, backticks, `;`, a newline or `it's a b` are only characters.
`{overrides}` is the one placeholder that stands for several arguments: one `name=value`
per factor, each quoted on its own. The filled string is what plan.toml shows, what `run`
starts and what the SLURM scripts start, byte for byte.
"""

from __future__ import annotations

import functools
import re
import shlex
import string
from collections.abc import Mapping
from typing import Any

TRAINING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "variant", "seed", "factor", "value", "factors", "overrides",
     "checkpoint_dir", "resume", "export_name", "steps", "micro_batch", "accumulation",
     "effective_batch", "base_model", "trained_parameters", "dataset"}
)
EMBEDDING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "version", "shard", "shards", "out_dir", "resume", "model",
     "tokenizer", "truncation", "pooling", "normalization", "batching", "batch_size",
     "token_budget", "part", "parts"}
)
_INTEGERS = frozenset({"seed", "steps", "micro_batch", "accumulation", "effective_batch",
                       "version", "shard", "shards", "truncation", "batch_size",
                       "token_budget", "part", "parts"})
_INDEXED = frozenset({"factors"})
_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\[\]]*\])?")
MAX_TEMPLATE_CHARS = 8192
"""Longest command template accepted (the filled command is bounded by it and the names)."""


class Args(tuple[str, ...]):
    """A placeholder value that stands for several arguments (`{overrides}`)."""

    __slots__ = ()

    def __str__(self) -> str:
        return " ".join(self)


class _Factors(dict[str, Any]):
    """Sample factors for the check at load time: any name has a value."""

    def __missing__(self, key: str) -> str:
        return "x"


def template_fields(template: str) -> set[str]:
    """Top-level placeholder names used in a `str.format` template."""
    names: set[str] = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def _quote_state(text: str, state: str, escaped: bool) -> tuple[str, bool]:
    """Shell quote state after `text`: "" (none), "'" or '"'; and a pending backslash."""
    for ch in text:
        if escaped:
            escaped = False
        elif state == "'":
            state = "" if ch == "'" else state
        elif ch == "\\":
            escaped = True
        elif state == '"':
            state = "" if ch == '"' else state
        elif ch in "'\"":
            state = ch
    return state, escaped


def _quoted(value: str, state: str) -> str:
    # Inside the template's own quotes a value that cannot end them or expand stays as it
    # is (readable); any other is quoted on its own between a closing and a reopening.
    if state == '"' and not any(c in value for c in '"\\$`'):
        return value
    if state == "'" and "'" not in value:
        return value
    q = shlex.quote(value)
    if q == value or not state:
        return q
    return f"{state}{q}{state}"


class TemplateError(ValueError):
    """A template that cannot be filled; the message says why."""


Piece = tuple[str, str | None, str, str | None, str, str]
"""One step of a parsed template: the literal text before it, the placeholder's name (None
after the last one), its format spec and conversion, the shell quote state its value lands
in, and the error to raise on reaching it ("" for none)."""


@functools.lru_cache(maxsize=256)
def _parsed(template: str) -> tuple[tuple[Piece, ...], str]:
    """The template's steps and the quote state it ends in, worked out once per template:
    the quote state depends only on the template's own text, never on the values, so a
    command per run of a matrix parses its template once. Errors are kept in place, so
    they are raised in the order filling would meet them."""
    pieces: list[Piece] = []
    state, escaped = "", False
    try:
        for literal, name, spec, conv in string.Formatter().parse(template):
            state, escaped = _quote_state(literal, state, escaped)
            error = ""
            if name is not None:
                m = _FIELD.fullmatch(name)
                if not m:
                    error = (f"{{{name}}}: a placeholder is a name, optionally indexed like "
                             "{factors[lr]}; no attributes")
                elif m[2] and m[1] not in _INDEXED:
                    error = f"{{{name}}}: only {{factors[...]}} may be indexed"
                elif spec and "{" in spec:
                    error = f"{{{name}}}: nested placeholders are not supported"
                elif escaped:
                    error = f"{{{name}}} follows a backslash, which would escape its quoting"
            pieces.append((literal, name, spec or "", conv, state, error))
            if error:
                break
    except ValueError as exc:  # a malformed template, met where parsing reaches it
        pieces.append(("", None, "", None, state, f"cannot be filled: {exc}"))
    return tuple(pieces), state


def render(template: str, values: Mapping[str, Any]) -> str:
    """The command with every placeholder filled by its shell-quoted value."""
    fmt = string.Formatter()
    out: list[str] = []
    pieces, end = _parsed(template)
    try:
        for literal, name, spec, conv, state, error in pieces:
            out.append(literal)
            if error:
                raise TemplateError(error)
            if name is None:
                continue
            # A plain name is a look-up (what get_field does for it); `factors[lr]` indexes.
            obj = values[name] if name.isidentifier() else fmt.get_field(name, (), values)[0]
            if isinstance(obj, Args) and not spec and not conv and not state:
                out.append(" ".join(shlex.quote(a) for a in obj))
                continue
            if conv:
                obj = fmt.convert_field(obj, conv)
            out.append(_quoted(format(obj, spec), state))
    except TemplateError:
        raise
    except KeyError as exc:
        raise TemplateError(f"placeholder {exc} has no value here") from None
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise TemplateError(f"cannot be filled: {exc}") from None
    if end:
        raise TemplateError(f"unbalanced {end} quote")
    return "".join(out)


def _samples(allowed: frozenset[str]) -> dict[str, Any]:
    values: dict[str, Any] = {k: (1 if k in _INTEGERS else "x") for k in allowed}
    if "factors" in allowed:
        values["factors"] = _Factors()
    if "overrides" in allowed:
        values["overrides"] = Args(("a=1",))
    return values


def check_template(template: str, allowed: frozenset[str]) -> str:
    """The template, if its placeholders are known and it fills without error."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ValueError(f"longer than {MAX_TEMPLATE_CHARS} characters")
    if "\0" in template:
        raise ValueError("contains a NUL character")
    try:
        used = template_fields(template)
    except ValueError as exc:
        raise ValueError(f"malformed placeholder: {exc}") from None
    unknown = sorted(used - allowed)
    if "" in used:
        raise ValueError("empty placeholder {} (name one of: " + ", ".join(sorted(allowed)) + ")")
    if unknown:
        raise ValueError(
            f"unknown placeholder {{{unknown[0]}}}; known: " + ", ".join(sorted(allowed))
        )
    render(template, _samples(allowed))  # a spec like {seed:zz} fails here, not at plan time
    return template


_SHELL_SYNTAX = set("$`*?[~;&|<>()#")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def needs_shell(command: str) -> bool:
    """Whether the command uses shell syntax (outside quotes, or `$`/backquote or a line
    continuation inside double quotes); without any it runs as a plain argument vector,
    which splits exactly as the shell would split it."""
    state, escaped = "", False
    for ch in command:
        if escaped:
            escaped = False
            if ch in "\r\n":
                return True  # a line continuation: shlex and sh read it differently
            continue
        if state == "'":
            state = "" if ch == "'" else state
        elif ch == "\\":
            escaped = True
        elif state == '"':
            if ch in "$`":
                return True
            state = "" if ch == '"' else state
        elif ch in "'\"":
            state = ch
        elif ch in _SHELL_SYNTAX or ch in "\r\n":
            return True
    return False


def launch_mode(command: str) -> tuple[str, list[str]]:
    """`("exec", argv)` for a plain command, `("shell", [command])` when it needs a shell."""
    if needs_shell(command):
        return "shell", [command]
    try:
        argv = shlex.split(command)
    except ValueError:  # unbalanced quotes: let the shell report it in the run's log
        return "shell", [command]
    if not argv or _ASSIGNMENT.match(argv[0]):
        return "shell", [command]
    return "exec", argv
