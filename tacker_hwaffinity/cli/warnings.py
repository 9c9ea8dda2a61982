"""Warnings: likely mistakes that do not stop a command, printed as kubectl prints its own.

Each is one line on standard error, ``Warning: <text>``, whatever the output format, so that
piped JSON or YAML stays clean; structured outputs also list them under ``warnings``.
Identical warnings are printed once.
"""
import sys


def emit(warnings, stream=None):
    """Write each distinct warning of WARNINGS (strings, in order) to STREAM (stderr)."""
    stream = stream or sys.stderr
    for text in dict.fromkeys(warnings):
        stream.write("Warning: %s\n" % text)
