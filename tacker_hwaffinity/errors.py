"""The one error type for bad user input.

Every message names where the problem is: the file, the object inside it
and the field, then what was expected. Entry points turn it into a
one-line message and exit status 2.
"""


class InputError(Exception):
    """Bad user input: a file, an object or a field that is not acceptable."""

    def __init__(self, message: str, source: str | None = None, obj: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.obj = obj
        self.field = field

    def located(self, source: str | None = None, obj: str | None = None) -> "InputError":
        """Return a copy with missing location parts filled in."""
        return InputError(self.message, source=self.source or source,
                          obj=self.obj or obj, field=self.field)

    def __str__(self) -> str:
        return located(self.message, self.source, self.obj, self.field)


def located(message: str, source: str | None = None, obj: str | None = None,
            field: str | None = None) -> str:
    """'SOURCE: OBJ: field FIELD: MESSAGE', leaving out the parts not given."""
    parts = [p for p in (source, obj) if p]
    if field:
        parts.append("field %s" % field)
    parts.append(message)
    return ": ".join(parts)
