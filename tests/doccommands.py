"""The commands a Markdown page shows, and the output it shows for each, as the tests
that run them read them: the README's (``tests/test_readme_commands.py``) and the user
guide's (``tests/tacker_e2e/guide.py``).

In a ```console block (and a plain ``` block), a line starting with `$ ` is a command (a
line ending in a backslash continues it) and the lines after it, up to the next command,
are the output the page shows; a line "..." stands for any number of printed lines. In a
```sh or ```bash block every line that is not a comment is a command. A block right after
an HTML comment ``<!-- KIND: VALUE -->`` carries that mark: ``needs`` (the README: what no
test run has), ``story`` (the user guide: the step of the Tacker story that runs it) or
``file`` (the user guide: a file the user writes, VALUE its name; any language).
"""
import re

_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!-- (needs|story|file): ([\w./-]+) -->$")
RUNNABLE = ("console", "sh", "bash", "")


class Command:
    def __init__(self, text, lang, marks, line):
        self.text, self.lang, self.marks, self.line = text, lang, marks, line
        self.output = []

    @property
    def needs(self):
        return self.marks.get("needs")

    def __repr__(self):
        return "line %d: %s" % (self.line, self.text)


class Block:
    """A fenced block: its language, its marks ({kind: value}), its lines, and the number
    of its first line in the page."""

    def __init__(self, lang, marks, lines, line):
        self.lang, self.marks, self.lines, self.line = lang, marks, lines, line


def blocks(text):
    """[Block] of the Markdown TEXT, in order."""
    out = []
    lines = text.split("\n")
    i, marks = 0, {}
    while i < len(lines):
        m = _MARK.match(lines[i].strip())
        if m:
            marks[m.group(1)] = m.group(2)
            i += 1
            continue
        fence = _FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                marks = {}                  # a mark belongs to the very next block
            i += 1
            continue
        lang, i = fence.group(1), i + 1
        start = i
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        out.append(Block(lang, marks, lines[start:i], start + 1))
        i, marks = i + 1, {}
    return out


def commands(text):
    """[Command] of the Markdown TEXT, in order (see the module's docstring)."""
    out = []
    for block in blocks(text):
        if block.lang in RUNNABLE and "file" not in block.marks:
            out.extend(_commands_of(block))
    return out


def _commands_of(block):
    out, j, current = [], 0, None
    while j < len(block.lines):
        line, number = block.lines[j], block.line + j
        prompted = line.startswith("$ ")
        if block.lang in ("sh", "bash"):
            is_command = bool(line.strip()) and not line.lstrip().startswith("#")
        else:
            is_command = prompted
        if not is_command:
            if current is not None and line.strip():
                current.output.append(line.rstrip())
            j += 1
            continue
        text = [line[2:] if prompted else line]
        while text[-1].endswith("\\") and j + 1 < len(block.lines):
            j += 1
            text.append(block.lines[j])
        current = Command("\n".join(text), block.lang, block.marks, number)
        out.append(current)
        j += 1
    return out


def match(shown, printed, state, same):
    """Whether SHOWN (a page's lines of a command's output) is PRINTED (its non-blank
    lines), line for line, where a line "..." stands for any number of printed lines:
    SAME(shown line, printed line, STATE) gives the state after a match or None, and this
    gives the state after the whole match or None."""
    if not shown:
        return None if printed else state
    if shown[0] == "...":
        for i in range(len(printed) + 1):
            after = match(shown[1:], printed[i:], state, same)
            if after is not None:
                return after
        return None
    if not printed:
        return None
    after = same(shown[0], printed[0], state)
    return None if after is None else match(shown[1:], printed[1:], after, same)


def shows(shown, printed):
    """Whether SHOWN is PRINTED exactly (see :func:`match`): the page leaves lines out
    only where it says so."""
    return match(shown, printed, (), lambda s, p, state: state if s == p else None) \
        is not None
