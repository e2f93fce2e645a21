"""Where each placeholder of a `shell = true` template lands in the shell's grammar.

The scanner follows the nesting a POSIX shell (and bash) reads: quotes, `$(...)`,
backquotes, `${...}`, arithmetic, comments, heredocs and here-strings. A placeholder is
accepted only where a plain word of the top-level program stands, bare or inside one
top-level quote, because only there does quoting its value make the value one literal
argument. Everywhere else the template is refused with the position named.
"""

from __future__ import annotations

from planner.spec.shellwords import _CODE_COMMANDS, _CODE_FLAG, GrammarError, Item, Slot

_QUOTES = ("'", '"')
_CODE = ("top", "$(", "(", "${", "$((", "`")
_BREAK = set(" \t\n;&|()<>")
_NESTED = {"$(": "inside $(...)", "(": "inside $(...)", "${": "inside ${...}",
           "$((": "inside arithmetic", "`": "inside backquotes"}


def _at(pos: int) -> str:
    return f"at character {pos + 1}"


class _Scan:
    """One pass over a template's items."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.i = 0
        self.stack = ["top"]
        self.pieces: list[str | Slot] = []
        self.words: list[str] = []  # finished words of the current simple command
        self.word: list[str] | None = None  # the top-level word being read, as raw text
        self.word_slots: list[int] = []  # pieces that are placeholders of that word
        self.herestring = -1  # the index of the word a `<<<` feeds to its command
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip tabs) awaiting a body
        self.in_test = False  # between `[[` and `]]`, operands are evaluated as arithmetic

    def peek(self, k: int = 1) -> str | Slot | None:
        j = self.i + k
        return self.items[j][1] if j < len(self.items) else None

    def emit(self, ch: str) -> None:
        if self.pieces and isinstance(self.pieces[-1], str):
            self.pieces[-1] += ch
        else:
            self.pieces.append(ch)
        if self.word is not None and self._top_level():
            self.word.append(ch)

    def _top_level(self) -> bool:
        return len(self.stack) == 1 or (len(self.stack) == 2 and self.stack[1] in _QUOTES)

    def end_word(self) -> None:
        if self.word is None:
            return
        raw = "".join(self.word)
        if len(self.word_slots) == 1 and not raw:
            k = self.word_slots[0]
            s = self.pieces[k]
            assert isinstance(s, Slot)
            self.pieces[k] = Slot(s.name, s.spec, s.conv, s.quote, not s.quote)
        self.words.append(raw.replace("'", "").replace('"', ""))
        if self.words[-1] == "[[":
            self.in_test = True
        elif self.words[-1] == "]]":
            self.in_test = False
        self.word, self.word_slots = None, []

    def end_command(self) -> None:
        self.end_word()
        self.words = []
        self.in_test = False
        self.herestring = -1

    def slot(self, pos: int, slot: Slot) -> None:
        frame = self.stack[-1]
        name = "{" + slot.name + "}"
        where = ""
        if frame == "#":
            where = "after `#` (a comment)"
        elif any(f in _NESTED for f in self.stack[1:]):
            where = next(_NESTED[f] for f in reversed(self.stack) if f in _NESTED)
        elif len(self.stack) > 2:
            where = "inside a nested quote"
        elif self.herestring == len(self.words):
            where = "in a here-string (`<<<`), which a program may read as code"
        elif self.in_test:
            where = "inside `[[ ... ]]`, whose operands bash may evaluate as arithmetic"
        elif self.words and self.words[0] in _CODE_COMMANDS:
            where = f"in the arguments of `{self.words[0]}`, which runs them as code"
        elif self.words and _CODE_FLAG.fullmatch(self.words[-1]):
            where = f"in the code after `{self.words[-1]}`"
        if not where and self.pieces and isinstance(self.pieces[-1], str) and \
                self.pieces[-1].endswith("$") and frame != "'":
            where = "right after `$`"
        if where:
            raise GrammarError(f"{name} stands {where} ({_at(pos)}); with shell = true a "
                               "placeholder may stand only where a plain word stands")
        if self.word is None:
            self.word = []
        self.word_slots.append(len(self.pieces))
        self.pieces.append(Slot(slot.name, slot.spec, slot.conv,
                                self.stack[1] if len(self.stack) == 2 else ""))

    def run(self) -> tuple[str | Slot, ...]:
        while self.i < len(self.items):
            pos, it = self.items[self.i]
            if isinstance(it, Slot):
                self.slot(pos, it)
            else:
                self.char(pos, it)
            self.i += 1
        if self.stack[-1] == "#":
            self.stack.pop()
        if len(self.stack) > 1:
            frame = self.stack[-1]
            raise GrammarError(f"unbalanced {frame} quote" if frame in _QUOTES
                               else f"unclosed {frame}")
        self.end_command()
        return tuple(self.pieces)

    def escape(self, pos: int) -> None:
        nxt = self.peek()
        if isinstance(nxt, Slot):
            raise GrammarError("{" + nxt.name + "} follows a backslash, which would escape "
                               f"its quoting ({_at(pos)})")
        self.emit("\\")
        if nxt is not None:
            self.i += 1
            self.emit(nxt)

    def char(self, pos: int, c: str) -> None:
        frame = self.stack[-1]
        if frame == "#":
            if c == "\n":
                self.stack.pop()
                self.code(pos, c)
            else:
                self.emit(c)
            return
        if frame == "'":
            self.emit(c)
            if c == "'":
                self.stack.pop()
            return
        if c == "\\":
            if len(self.stack) == 1 and self.word is None:
                self.word = []
            self.escape(pos)
            return
        if frame == '"':
            self.emit(c)
            if c == '"':
                self.stack.pop()
            elif c == "`":
                self.stack.append("`")
            elif c == "$":
                self.dollar()
            return
        self.code(pos, c)

    def dollar(self) -> None:
        nxt, after = self.peek(), self.peek(2)
        if nxt == "(" and after == "(":
            self.stack.append("$((")
            self.emit("((")
            self.i += 2
        elif nxt == "(":
            self.stack.append("$(")
            self.emit("(")
            self.i += 1
        elif nxt == "{":
            self.stack.append("${")
            self.emit("{")
            self.i += 1

    def code(self, pos: int, c: str) -> None:
        frame = self.stack[-1]
        top = len(self.stack) == 1
        last = self.pieces[-1] if self.pieces else "\n"
        if c == "#" and isinstance(last, str) and last[-1] in " \t\n;&|()":
            self.end_word()
            self.stack.append("#")
            self.emit(c)
            return
        if top and c in _BREAK:
            self.end_word()
            if c in ";&|()\n":
                self.end_command()
        elif top and self.word is None:
            self.word = []
        self.emit(c)
        if c in _QUOTES:
            self.stack.append(c)
        elif c == "`":
            if frame == "`":
                self.stack.pop()
            else:
                self.stack.append("`")
        elif c == "$":
            self.dollar()
        elif c == "(":
            if top and self.peek() == "(" and not self.words:
                self.stack.append("$((")  # an arithmetic command `(( ... ))`
                self.emit("(")
                self.i += 1
            elif not top:
                self.stack.append("(")
        elif c == ")" and frame in ("$(", "("):
            self.stack.pop()
        elif c == ")" and frame == "$((" and self.peek() == ")":
            self.stack.pop()
            self.emit(")")
            self.i += 1
        elif c == "}" and frame == "${":
            self.stack.pop()
        elif c == "<" and self.peek() == "<" and self.peek(2) == "<":
            self.emit("<<")
            self.i += 2
            self.herestring = len(self.words)
        elif c == "<" and self.peek() == "<":
            self.heredoc(pos)
        elif c == "\n":
            self.newline()

    def heredoc(self, pos: int) -> None:
        """`<<WORD` / `<<-WORD`: the delimiter now, the body after the line ends."""
        self.i += 1
        self.emit("<")
        strip = self.peek() == "-"
        if strip:
            self.i += 1
            self.emit("-")
        while self.peek() in (" ", "\t"):
            self.i += 1
            self.emit(self.items[self.i][1])  # type: ignore[arg-type]
        delim: list[str] = []
        while (nxt := self.peek()) is not None and (isinstance(nxt, Slot)
                                                    or nxt not in _BREAK):
            if isinstance(nxt, Slot):
                raise GrammarError("{" + nxt.name + "} stands in a heredoc's delimiter "
                                   f"({_at(self.items[self.i + 1][0])})")
            self.i += 1
            self.emit(nxt)
            if nxt not in "'\"\\":
                delim.append(nxt)
        self.heredocs.append(("".join(delim), strip))

    def newline(self) -> None:
        """Read the bodies of the heredocs the line just ended opened, as literal text."""
        for delim, strip in self.heredocs:
            line: list[str] = []
            while self.i + 1 < len(self.items):
                self.i += 1
                pos, it = self.items[self.i]
                if isinstance(it, Slot):
                    raise GrammarError("{" + it.name + "} stands inside a heredoc "
                                       f"({_at(pos)}), where the shell expands and no "
                                       "quoting holds")
                self.emit(it)
                if it == "\n":
                    text = "".join(line)
                    if (text.lstrip("\t") if strip else text) == delim:
                        break
                    line = []
                else:
                    line.append(it)
        self.heredocs = []


def scan_shell(items: list[Item]) -> tuple[str | Slot, ...]:
    """The template's pieces, each placeholder with the quote it stands in."""
    return _Scan(items).run()
