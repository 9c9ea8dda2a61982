"""Run the loaders on libyaml and the C json scanner ("c") or on the pure-Python ones ("pure")."""
import json.scanner
from contextlib import contextmanager

import yaml

from tacker_hwaffinity.objects import json_strict, yaml_strict

BACKENDS = ("c", "pure")


@contextmanager
def backend(name):
    """Switch both loaders to NAME for the duration; the C one must really be there."""
    c = name == "c"
    if c:
        assert yaml.__with_libyaml__, "PyYAML is built without libyaml: the C path is untested"
        assert json.scanner.c_make_scanner is not None, "no C json scanner"
    saved = yaml_strict.LIBYAML, json_strict.C_SCANNER
    yaml_strict.LIBYAML, json_strict.C_SCANNER = c, c
    try:
        yield
    finally:
        yaml_strict.LIBYAML, json_strict.C_SCANNER = saved
