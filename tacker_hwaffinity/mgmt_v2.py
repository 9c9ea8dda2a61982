"""Tacker v2 MgmtDriver script: ``mgmt-drivers-hwaffinity``.

Tacker's v2 conductor runs the VNF package's copy of this file
(``Scripts/hwaffinity_mgmt_v2.py``) as ``python SCRIPT`` with a pickled dict
on stdin (``operation``, ``request``, ``vnf_instance``, ``grant_request``,
``grant_response``, ``tmp_csar_dir``...). It prints a pickled dict on stdout
(the VNF instance with the report in its metadata) and exits 0, or exits 1
with a one-line reason on stderr. The logic is in the installed package
(``tacker_hwaffinity.mgmt.tacker_v2``), so this file stays stable.
"""
import sys


def main():
    try:
        from tacker_hwaffinity.mgmt import tacker_v2
    except ImportError as e:
        sys.stderr.write("tacker-hwaffinity is not installed in the conductor's Python "
                         "(%s): install it there from its checkout (pip install "
                         "'.[tacker]') or a wheel built there (pip install "
                         "'dist/tacker_hwaffinity-VERSION-py3-none-any.whl[tacker]')\n" % e)
        return 1
    return tacker_v2.main(sys.stdin.buffer, sys.stdout.buffer, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
