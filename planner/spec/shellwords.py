"""The shell-word grammar of command templates, applied once when a preset loads.

A template is a sequence of literal characters and placeholders (`Slot`). Without a shell
it is split into words the way a POSIX shell splits a simple command (blanks, `'...'`,
`"..."`, backslashes); anything a shell would treat as syntax (pipes, `&&`, `;`,
redirections, `$`, backquotes, globs, a leading `NAME=value`) is refused, since no shell
will read it. With a shell the text is the shell's, and each placeholder must stand where
a plain word stands: not in a comment, a heredoc, `$(...)`, backquotes, `${...}`,
arithmetic, a quote inside any of those, nor in the code of a `-c` flag, `eval` or `trap`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

Item = tuple[int, "str | Slot"]
"""A template position (its character offset) and what stands there: one literal
character, or a placeholder."""


@dataclass(frozen=True)
class Slot:
    """A placeholder as it stands in the template."""

    name: str
    """What is inside the braces before any `:` or `!`, e.g. `factors[lr]`."""
    spec: str
    """Its format spec."""
    conv: str | None
    """Its conversion (`r`, `s`, `a`), if any."""
    quote: str = ""
    """The quote it stands in: "" (none), "'" or '"'."""
    whole: bool = False
    """Whether it is the whole of an unquoted word (so `{overrides}` may be several)."""


Word = tuple["str | Slot", ...]
"""One argument: literal text and placeholders, joined when filled."""


class GrammarError(ValueError):
    """A template that breaks the grammar; the message names the position."""


_CODE_FLAG = re.compile(r"-[A-Za-z]*c[A-Za-z]*")
"""`-c`, `-ec`, `-lc`...: the next word is code for the program (a shell, an interpreter)."""
_CODE_COMMANDS = frozenset({"eval", "trap", "alias", "let"})
_BUILTINS = _CODE_COMMANDS | {".", "cd", "exec", "export", "set", "source", "ulimit",
                              "umask", "unset", "[[", "(("}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_ONLY = {"|": "a pipe", "&": "`&`", ";": "`;`", "<": "a redirection",
               ">": "a redirection", "(": "a subshell", ")": "`)`", "$": "a `$` expansion",
               "`": "a command substitution", "\n": "a line break", "\r": "a line break",
               "*": "a glob", "?": "a glob", "[": "a glob"}


def _at(pos: int) -> str:
    return f"at character {pos + 1}"


def _name(slot: Slot) -> str:
    return "{" + slot.name + "}"


def split_words(items: list[Item]) -> tuple[Word, ...]:
    """The words of a template run without a shell."""
    words: list[list[str | Slot]] = []
    cur: list[str | Slot] | None = None
    quote, quoted_start, i = "", False, 0
    slots: list[tuple[int, int, Slot]] = []  # (word index, part index, slot) to mark whole

    def start() -> list[str | Slot]:
        nonlocal cur
        if cur is None:
            cur = []
            words.append(cur)
        return cur

    while i < len(items):
        pos, it = items[i]
        if isinstance(it, Slot):
            word = start()
            slots.append((len(words) - 1, len(word), it))
            word.append(Slot(it.name, it.spec, it.conv, quote))
        elif quote == "'":
            if it == "'":
                quote = ""
            else:
                start().append(it)
        elif it == "\\" and quote != "'":
            nxt = items[i + 1][1] if i + 1 < len(items) else None
            if isinstance(nxt, Slot):
                raise GrammarError(f"{_name(nxt)} follows a backslash ({_at(pos)})")
            i += 1
            if nxt is None:
                raise GrammarError(f"a backslash ends the command ({_at(pos)})")
            if nxt == "\n":
                pass  # a line continuation joins the lines
            elif quote == '"' and nxt not in '"\\':
                start().extend(("\\", nxt))
            else:
                start().append(nxt)
        elif quote == '"':
            if it == '"':
                quote = ""
            elif it in "$`":
                raise GrammarError(f"{_SHELL_ONLY[it]} ({_at(pos)}) needs a shell: set "
                                   "shell = true, or quote it with '...'")
            else:
                start().append(it)
        elif it in " \t":
            cur = None
        elif it in "'\"":
            quoted_start = quoted_start or (cur is None and not words)
            start()
            quote = it
        elif it in _SHELL_ONLY or (it in "#~" and cur is None):
            what = _SHELL_ONLY.get(it) or ("a comment" if it == "#" else "`~`")
            raise GrammarError(f"{what} ({_at(pos)}) needs a shell: set shell = true, or "
                               "quote the character")
        else:
            start().append(it)
        i += 1
    if quote:
        raise GrammarError(f"unbalanced {quote} quote")
    if not words:
        raise GrammarError("the command is empty")
    head = words[0]
    if not quoted_start and isinstance(head[0], str) and _ASSIGNMENT.match("".join(
            p for p in head[:head.index("=") + 1] if isinstance(p, str)) if "=" in head
            else ""):
        raise GrammarError("a leading NAME=value needs a shell: set shell = true, or start "
                           "the command with `env NAME=value`")
    program = _literal(_join(head))
    if program in _BUILTINS:
        raise GrammarError(f"`{program}` is a shell builtin, not a program: it needs a shell "
                           "(set shell = true)")
    for w, k, slot in slots:
        word = words[w]
        if len(word) == 1 and not word[0].quote:  # type: ignore[union-attr]
            word[k] = Slot(slot.name, slot.spec, slot.conv, "", True)
    out = tuple(_join(w) for w in words)
    _refuse_code_words(out)
    return out


def _join(parts: list[str | Slot]) -> Word:
    """Adjacent characters as one string."""
    joined: list[str | Slot] = []
    for p in parts:
        if isinstance(p, str) and joined and isinstance(joined[-1], str):
            joined[-1] += p
        else:
            joined.append(p)
    return tuple(joined)


def _literal(word: Word) -> str | None:
    return word[0] if len(word) == 1 and isinstance(word[0], str) else None


def _refuse_code_words(words: tuple[Word, ...]) -> None:
    """No placeholder in the word after a `-c` flag: that word is code."""
    for prev, word in itertools.pairwise(words):
        flag = _literal(prev)
        slot = next((p for p in word if isinstance(p, Slot)), None)
        if flag is not None and slot is not None and _CODE_FLAG.fullmatch(flag):
            raise GrammarError(f"{_name(slot)} is in the code after `{flag}`, where a value "
                               "would run as code; pass it as an argument of its own "
                               "(`sh -c '... \"$1\"' sh {...}`)")
