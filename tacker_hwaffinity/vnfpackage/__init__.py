"""The VNF package's file formats, shared by the package tools (``csar/``: build,
validate) and the translator (``translator/``: translate a CSAR), which sits below them.

| module | job |
| --- | --- |
| ``meta`` | TOSCA.meta: read into blocks, write blocks, content types |
| ``zipio`` | deterministic zip writing; bounded reading; member names that stay inside |

See doc/csar.md.
"""
