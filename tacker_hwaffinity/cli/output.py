"""``-o``: the output format of every command, as kubectl spells it.

``-o`` is always a format, never a path (files a command writes are named by
``--output-dir`` or ``--output-file``). Each command offers the formats that mean
something for it:

* ``text`` (the default) fits 100 columns; ``wide`` is the same without wrapping,
  with the extra columns a command has;
* ``json`` and ``yaml`` are one document with ``apiVersion: hwaffinity/v1`` and a
  ``kind`` naming its schema (doc/output.md; the JSON Schemas in doc/schemas/ are
  what tests check the real outputs against). Within ``v1`` fields are only added;
  a field changing or going away makes ``v2``;
* ``name`` prints the ``kind/name`` of what a command selected, one a line (kubectl's
  ``-o name``), for scripts;
* ``svg`` (plan, audit, numa plan) draws the result.
"""
import argparse
import json
import sys

import yaml

API_VERSION = "hwaffinity/v1"
TEXT, WIDE, JSON, YAML, NAME, SVG = "text", "wide", "json", "yaml", "name", "svg"
STRUCTURED = (JSON, YAML)


def add_output_arg(parser, formats, path_option=None):
    """``-o/--output FORMAT`` with FORMATS (the first is the default). PATH_OPTION names
    the option that takes an output path, for the message when ``-o`` is given one."""
    def fmt(value):
        if value in formats:
            return value
        hint = ""
        if path_option and ("/" in value or "." in value):
            hint = " (-o is the output format; the path is %s)" % path_option
        raise argparse.ArgumentTypeError("invalid output format %r: choose from %s%s"
                                         % (value, ", ".join(formats), hint))
    fmt.__name__ = "output format"
    parser.add_argument("-o", "--output", type=fmt, choices=formats, default=formats[0],
                        metavar="|".join(formats),
                        help="output format: %s (json and yaml: one document, apiVersion "
                             "%s, whose kind names its schema)" % (", ".join(formats),
                                                                   API_VERSION))


def document(kind, body):
    """BODY (a dict) as a versioned document of KIND."""
    doc = {"apiVersion": API_VERSION, "kind": kind}
    doc.update(body)
    return doc


def dump(doc, fmt, stream=None):
    """Write DOC as JSON or YAML (FMT) to STREAM (stdout)."""
    stream = stream or sys.stdout
    if fmt == YAML:
        yaml.safe_dump(doc, stream, sort_keys=False, default_flow_style=False,
                       allow_unicode=True, width=100)
    else:
        json.dump(doc, stream, indent=2)
        stream.write("\n")


def names(kind_names, stream=None):
    """``-o name``: each (kind, name) as kind/name, one a line."""
    stream = stream or sys.stdout
    for kind, name in kind_names:
        stream.write("%s/%s\n" % (kind, name))
