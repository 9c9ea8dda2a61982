"""VNF packages (CSAR): ``hwaffinity csar build`` and ``hwaffinity csar validate``.

| module | job |
| --- | --- |
| ``meta`` | TOSCA.meta: read into blocks, write blocks, content types |
| ``zipio`` | deterministic zip writing; safe reading and extraction |
| ``drivers`` | the installed MgmtDriver files and where a VNFD wants them |
| ``build`` | a source directory to a package |
| ``problems`` | what ``validate`` reports: file, object, field, message |
| ``tacker_checks`` | Tacker's own upload and MgmtDriver checks, called offline |
| ``manifests`` | Kubernetes manifests against the ``kubernetes`` client models |
| ``placement`` | ``hwaffinity plan`` over a CNF package's manifests |
| ``validate`` | every check over one package |

See doc/csar.md.
"""
