"""``doc/user-guide.md`` as the story (``test_tacker_cnf.py``) runs it: each command the
guide shows runs at its step, and its output must be what the guide shows.

The page's blocks are read as the README's are (``tests/doccommands.py``), and:

* a ```console block after ``<!-- story: STEP -->`` is run by the story's step STEP
  (:meth:`Guide.run`), its commands in order, each with ``bash -c`` in one working
  directory, with the cloud's ``OS_*`` variables and ``KUBECONFIG`` set as a user sets
  them;
* ``<NAME>`` (capitals, digits, ``_``) stands for a value of the run: in a command, the
  value bound before; in an output, the value bound before, or else one word that binds
  it; a placeholder that is a command's whole output binds the whole output (a
  certificate, say); a run of blanks counts as one (a table's column widths follow its
  values);
* a command whose line ends with ``# repeat until it says so`` runs again, every
  ``POLL_S`` for at most ``WAIT_S``, until it succeeds with the guide's output: what a
  user does while an operation is in progress (each try first calls the story's
  ``each``);
* a block after ``<!-- file: NAME -->`` is a file the user writes: :meth:`Guide.write`
  writes it into the working directory with the placeholders filled (a value of several
  lines indented as its placeholder is), or, for a file the story makes its own way (its
  harness's values), :meth:`Guide.check_file` checks the file against the block as an
  output is checked (``...`` for lines left out) and binds its placeholders;
* the steps run in the page's order: a step the page shows before one already run
  fails (:meth:`Guide.run`);
* the working directory holds only what the page accounts for: the clone's ``csar/``
  and ``samples/`` and the image the page downloads (``GIVEN``), what the page's
  commands made, and the files it shows; anything else the story put there fails the
  next step, so a file the run uses is one the page shows.

A command that fails, or prints something else, fails the step with the guide's line,
what it shows and what was printed (normalised: the values bound shown as their
placeholders), so the guide can be corrected from the message.
"""
import os
import re
import subprocess
import time

from doccommands import Command, blocks, commands, match

HERE = os.path.dirname(os.path.abspath(__file__))
GUIDE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "doc", "user-guide.md")
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)>")
REPEAT = "# repeat until it says so"
WAIT_S = 180
POLL_S = 2
COMMAND_TIMEOUT_S = 120
# The image the guide downloads for VNF-A's TOSCA flavour (the working directory holds a
# stand-in: the download is a command the story cannot run).
IMAGE = "ubuntu-24.04-server-cloudimg-amd64.img"
# What the working directory holds before the first step, as for a user: a clone's
# directories the commands read, and the download.
GIVEN = ("csar", "samples", IMAGE)


class GuideError(AssertionError):
    pass


def _line_pattern(line, values):
    """A regex for one shown LINE: bound placeholders as their values, the others as one
    word each (a named group, a back reference when it repeats)."""
    out, seen, last = [], set(), 0
    for m in PLACEHOLDER.finditer(line):
        out.append(re.escape(line[last:m.start()]))
        name = m.group(1)
        if name in values:
            out.append(re.escape(values[name]))
        elif name in seen:
            out.append("(?P=%s)" % name)
        else:
            out.append("(?P<%s>\\S+)" % name)
            seen.add(name)
        last = m.end()
    out.append(re.escape(line[last:]))
    return re.compile("".join(out) + r"\Z")


def _same(shown, printed, values):
    m = _line_pattern(" ".join(shown.split()), values).match(" ".join(printed.split()))
    return None if m is None else dict(values, **m.groupdict())


def output_matches(shown, printed, values):
    """The values after SHOWN (the guide's lines) matched PRINTED (the output's non-blank
    lines), or None."""
    whole = PLACEHOLDER.fullmatch(shown[0]) if len(shown) == 1 else None
    if whole and whole.group(1) not in values:
        return dict(values, **{whole.group(1): "\n".join(printed)}) if printed else None
    return match(shown, printed, values, _same)


def repeats(command: Command) -> bool:
    """Whether COMMAND is one the page says to repeat until it prints what is shown."""
    return command.text.rstrip().endswith(REPEAT)


def fill(text, values):
    """TEXT with its placeholders replaced by their VALUES (a value of several lines
    indented as its placeholder is); an unbound one is an error."""
    def one(m):
        name = m.group(1)
        if name not in values:
            raise GuideError("%s: <%s> is not known at this step" % (GUIDE, name))
        start = text.rfind("\n", 0, m.start()) + 1
        indent = text[start:m.start()]
        indent = indent if not indent.strip() else ""
        return values[name].replace("\n", "\n" + indent)
    return PLACEHOLDER.sub(one, text)


class Guide:
    """The guide's commands, run in WORKDIR with ENV; VALUES are the placeholders bound
    so far (the story may bind some itself)."""

    def __init__(self, workdir, env, path=GUIDE):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.path, self.workdir, self.env = path, workdir, env
        self.commands = commands(text)
        self.files = {b.marks["file"]: b for b in blocks(text) if "file" in b.marks}
        self.values = {}
        self.seconds = {}
        self.ran = []                     # the steps run, in order
        self.accounted = set(GIVEN)       # the working directory's entries the page explains

    def steps(self):
        """The story's steps the page has blocks for, in order."""
        return list(dict.fromkeys(c.marks["story"] for c in self.commands
                                  if "story" in c.marks))

    def write(self, name):
        """Write the file NAME the guide shows, filled in; returns its path."""
        block = self.files[name]
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(fill("\n".join(block.lines) + "\n", self.values))
        self.accounted.add(name)
        return path

    def check_file(self, name: str) -> dict:
        """Check the file NAME the story made in the working directory against the block
        the page shows for it (placeholders as in an output, ``...`` for lines left out);
        returns the values bound."""
        block = self.files[name]
        with open(os.path.join(self.workdir, name), encoding="utf-8") as f:
            made = [line.rstrip() for line in f.read().splitlines() if line.strip()]
        shown = [line.rstrip() for line in block.lines if line.strip()]
        after = match(shown, made, self.values, _same)
        if after is None:
            raise GuideError("%s:%d: the story's %s is not what the page shows:\n%s\n"
                             "made:\n%s" % (self.path, block.line, name, "\n".join(shown),
                                             "\n".join(self.normalised(made))))
        self.values = after
        self.accounted.add(name)
        return self.values

    def run(self, step, each=None):
        """Run the commands of STEP; returns the values bound."""
        todo = [c for c in self.commands if c.marks.get("story") == step]
        if not todo:
            raise GuideError("%s shows no block for the story's step %r" % (self.path, step))
        order = self.steps()
        if self.ran and order.index(step) < order.index(self.ran[-1]):
            raise GuideError("%s: the story runs the step %r after %r, which the page "
                             "shows after it: the page's order is not the run's" % (
                                 self.path, step, self.ran[-1]))
        unshown = sorted(set(os.listdir(self.workdir)) - self.accounted)
        if unshown:
            raise GuideError("%s: before the step %r the working directory holds %s, which "
                             "the page neither shows nor makes" % (
                                 self.path, step, ", ".join(unshown)))
        self.ran.append(step)
        t0 = time.monotonic()
        for command in todo:
            self._one(command, each)
        self.seconds[step] = time.monotonic() - t0
        self.accounted.update(os.listdir(self.workdir))     # what its commands made
        return self.values

    def _one(self, command, each):
        text = command.text
        repeat = repeats(command)
        if repeat:
            text = text.rstrip()[:-len(REPEAT)].rstrip()
        argv = fill(text, self.values)
        deadline = time.monotonic() + (WAIT_S if repeat else 0)
        while True:
            if each is not None:
                each()
            proc = subprocess.run(["bash", "-c", argv], cwd=self.workdir, env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=COMMAND_TIMEOUT_S)    # as a terminal shows them
            printed = [line.rstrip() for line in proc.stdout.splitlines() if line.strip()]
            after = output_matches(command.output, printed, self.values) \
                if proc.returncode == 0 else None
            if after is not None:
                self.values = after
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        raise GuideError("%s:%d: %s\nexit status %d; the guide shows:\n%s\nprinted:\n%s" % (
            self.path, command.line, command.text, proc.returncode,
            "\n".join(command.output), "\n".join(self.normalised(printed))))

    def normalised(self, lines):
        """LINES with the values bound shown as their placeholders (longest first)."""
        pairs = sorted(((v, k) for k, v in self.values.items() if v), key=lambda p: -len(p[0]))
        out = []
        for line in lines:
            for value, name in pairs:
                line = line.replace(value, "<%s>" % name)
            out.append(line)
        return out
