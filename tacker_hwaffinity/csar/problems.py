"""What ``csar validate`` reports: one problem per finding, located like InputError."""
import dataclasses

from tacker_hwaffinity.errors import located


@dataclasses.dataclass(frozen=True)
class Problem:
    source: str             # a file in the package (or the package itself)
    message: str
    obj: str | None = None          # the block, node, object or pod inside it
    field: str | None = None

    def __str__(self):
        return located(self.message, self.source, self.obj, self.field)

    def to_dict(self):
        return {"file": self.source, "object": self.obj, "field": self.field,
                "message": self.message}


def from_error(error, source=None):
    """A Problem from an InputError, its location filled with SOURCE when missing."""
    return Problem(error.source or source, error.message, error.obj, error.field)
