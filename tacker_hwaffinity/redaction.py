"""What of a failure can be said without the secrets it may quote.

A YAML file that PyYAML refuses may hold credentials (clouds.yaml, a kubeconfig, the
driver's parameters), and PyYAML's message may quote them: the line (with a snippet, when
it read a string) and the name of an alias it cannot find, which a password starting with
``*`` is to it. So only the error's type and place are said.
"""


def yaml_error(e: BaseException) -> str:
    """The PyYAML error E as ``ScannerError at line 3, column 7``: its type and place,
    never its text."""
    mark = getattr(e, "problem_mark", None)
    where = " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark else ""
    return type(e).__name__ + where
