"""Command templates: the placeholders a run's command may use, checked when a preset loads,
and filled so that no value can ever run as code.

A template is split into words once, when the preset loads (`planner.spec.shellwords`).
Each placeholder lies inside one word and its value becomes part of that word only; the
run is started as that argument vector, with no shell, by `run` and by the SLURM task
alike, and plan.toml records the vector. `{overrides}` standing as a word of its own is
several arguments, one `name=value` per factor.

A template that needs a shell (pipes, `&&`, redirections, `$VAR`) says `shell = true`. It
then runs as `/bin/sh -c SCRIPT`, each value quoted for the shell, and a placeholder may
stand only where a plain word of the script stands (`planner.spec.shellscan`).

A value with a line break or a NUL is refused in both modes.
"""

from __future__ import annotations

import functools
import re
import shlex
import string
from collections.abc import Mapping
from itertools import chain
from typing import Any, Protocol, TypeVar

from planner.spec.shellscan import scan_shell
from planner.spec.shellwords import GrammarError, Item, Slot, Word, split_words

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
SHELL = ("/bin/sh", "-c")
"""How a `shell = true` command starts: its script is the third argument."""
_BAD_VALUE = re.compile(r"[\n\r\0]")


class Args(tuple[str, ...]):
    """A placeholder value that stands for several arguments (`{overrides}`)."""

    __slots__ = ()

    def __str__(self) -> str:
        return " ".join(self)


class _Factors(dict[str, Any]):
    """Sample factors for the check at load time: any name has a value."""

    def __missing__(self, key: str) -> str:
        return "x"


class TemplateError(ValueError):
    """A template that cannot be filled; the message says why."""


def _field(body: str, pos: int) -> Slot:
    """The placeholder `{body}` at `pos`: name, conversion and spec, as `str.format` reads."""
    depth, end = 0, len(body)
    for k, ch in enumerate(body):
        depth += (ch == "[") - (ch == "]")
        if depth == 0 and ch in "!:":
            end = k
            break
    name, rest = body[:end], body[end:]
    conv: str | None = None
    if rest.startswith("!"):
        conv, _, spec = rest[1:].partition(":")
        if len(conv) != 1 or conv not in "rsa":
            raise TemplateError(f"{{{body}}}: unknown conversion !{conv}")
    else:
        spec = rest[1:]
    if not name:
        raise TemplateError("empty placeholder {}")
    m = _FIELD.fullmatch(name)
    if not m:
        raise TemplateError(f"{{{name}}}: a placeholder is a name, optionally indexed like "
                            "{factors[lr]}; no attributes")
    if m[2] and m[1] not in _INDEXED:
        raise TemplateError(f"{{{name}}}: only {{factors[...]}} may be indexed")
    return Slot(name, spec, conv)


def _items(template: str) -> list[Item]:
    """The template as literal characters and placeholders, each with its offset."""
    items: list[Item] = []
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c in "{}" and template.startswith(c * 2, i):
            items.append((i, c))
            i += 2
        elif c == "}":
            raise TemplateError(f"a single `}}` at character {i + 1}; write `}}}}` for one")
        elif c == "{":
            j = template.find("}", i)
            if j < 0:
                raise TemplateError(f"the `{{` at character {i + 1} is not closed")
            body = template[i + 1:j]
            if "{" in body:
                raise TemplateError(f"{{{body}}}: nested placeholders are not supported")
            items.append((i, _field(body, i)))
            i = j + 1
        else:
            items.append((i, c))
            i += 1
    return items


Parsed = tuple[Word, ...] | tuple[str | Slot, ...]
"""Words (no shell) or the script's pieces (`shell = true`)."""


@functools.lru_cache(maxsize=256)
def _parsed(template: str, shell: bool) -> Parsed:
    """The template parsed once: its grammar depends only on its own text, never on the
    values, so a matrix of runs parses its template once."""
    try:
        items = _items(template)
        if shell:
            if not template.strip():
                raise GrammarError("the command is empty")
            return scan_shell(items)
        return split_words(items)
    except GrammarError as exc:
        raise TemplateError(str(exc)) from None


def _value(slot: Slot, values: Mapping[str, Any], fmt: string.Formatter) -> Any:
    name = slot.name
    obj = values[name] if name.isidentifier() else fmt.get_field(name, (), values)[0]
    if isinstance(obj, Args) and slot.whole and not slot.spec and not slot.conv:
        args = list(obj)
    else:
        if slot.conv:
            obj = fmt.convert_field(obj, slot.conv)
        args = [format(obj, slot.spec)]
    for a in args:
        if _BAD_VALUE.search(a):
            raise TemplateError(f"{{{name}}}: its value {a[:40]!r} holds a line break or a "
                                "NUL, which no argument may")
    return args if isinstance(obj, Args) and slot.whole else args[0]


def _quoted(value: str, state: str) -> str:
    # Inside the template's own quotes a value that cannot end them or expand stays as it
    # is (readable); any other is quoted on its own between a closing and a reopening.
    if state == '"' and not any(c in value for c in '"\\$`!'):
        return value
    if state == "'" and "'" not in value:
        return value
    q = shlex.quote(value)
    if q == value or not state:
        return q
    return f"{state}{q}{state}"


def fill(template: str, values: Mapping[str, Any], shell: bool = False) -> tuple[list[str], str]:
    """The run's argument vector and the command as shown (plan.toml, dry run, status):
    `shlex.join` of the vector, or the filled script with `shell = true`."""
    fmt = string.Formatter()
    try:
        parsed = _parsed(template, shell)
        if shell:
            out: list[str] = []
            for piece in parsed:
                if isinstance(piece, str):
                    out.append(piece)
                    continue
                assert isinstance(piece, Slot)
                v = _value(piece, values, fmt)
                out.append(" ".join(shlex.quote(a) for a in v) if isinstance(v, list)
                           else _quoted(v, piece.quote))
            script = "".join(out)
            return [*SHELL, script], script
        argv: list[str] = []
        for word in parsed:
            assert isinstance(word, tuple)
            parts: list[str] = []
            for part in word:
                if isinstance(part, str):
                    parts.append(part)
                    continue
                v = _value(part, values, fmt)
                if isinstance(v, list):  # several arguments, standing as a word of their own
                    argv.extend(v)
                    break
                parts.append(v)
            else:
                argv.append("".join(parts))
        if not argv:
            raise TemplateError("the command is empty once filled")
        return argv, shlex.join(argv)
    except TemplateError:
        raise
    except KeyError as exc:
        raise TemplateError(f"placeholder {exc} has no value here") from None
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise TemplateError(f"cannot be filled: {exc}") from None


_UNSAFE = re.compile(r"[^\w@%+=:,./-]", re.ASCII)
_SAFE_BYTES = bytes(c for c in range(128) if not _UNSAFE.match(chr(c)))
"""The ASCII characters `_UNSAFE` leaves alone."""
"""What `shlex.quote` quotes a word for."""


def display(argv: list[str], shell: bool) -> str:
    """The command as people read it for an argument vector: `shlex.join`, or the script."""
    if shell:
        return argv[2]
    # Most vectors need no quoting at all: one search over all their words says so (a
    # plan's hundred thousand runs are shown each time it is read).
    if "" not in argv and _UNSAFE.search("".join(argv)) is None:
        return " ".join(argv)
    return shlex.join(argv)


def display_all(vectors: list[list[str]], text: str | None = None) -> list[str]:
    """`display` of each of these argument vectors (none a shell's): when no word of any
    needs quoting (a plan's hundred thousand runs, read back), one look says so. `text`:
    their words joined, when known."""
    if text is None:
        text = "".join(chain.from_iterable(vectors))
    if all(map(all, vectors)) and text.isascii() \
            and not text.encode().translate(None, _SAFE_BYTES):
        return list(map(" ".join, vectors))
    return [display(argv, False) for argv in vectors]


def template_fields(template: str) -> set[str]:
    """Top-level placeholder names used in a `str.format` template."""
    names: set[str] = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def _samples(allowed: frozenset[str]) -> dict[str, Any]:
    values: dict[str, Any] = {k: (1 if k in _INTEGERS else "x") for k in allowed}
    if "factors" in allowed:
        values["factors"] = _Factors()
    if "overrides" in allowed:
        values["overrides"] = Args(("a=1",))
    return values


def check_template(template: str, allowed: frozenset[str], shell: bool = False) -> str:
    """The template, if it splits into words (or, with `shell`, every placeholder stands
    where a plain word stands), its placeholders are known and it fills without error."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ValueError(f"longer than {MAX_TEMPLATE_CHARS} characters")
    if "\0" in template:
        raise ValueError("contains a NUL character")
    if not template.strip():
        raise ValueError("the command is empty")
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
    fill(template, _samples(allowed), shell)  # {seed:zz} fails here, not at plan time
    return template


class _Commanded(Protocol):
    @property
    def command(self) -> str: ...
    @property
    def shell(self) -> bool: ...


C = TypeVar("C", bound=_Commanded)


def check_command(model: C, allowed: frozenset[str]) -> C:
    """A model's `command` checked in its `shell` mode (a model validator's body)."""
    try:
        check_template(model.command, allowed, model.shell)
    except ValueError as exc:
        raise ValueError(f"@command: {exc}") from None
    return model
