"""VNF packages (CSAR): ``hwaffinity csar build`` and ``hwaffinity csar validate``.

| module | job |
| --- | --- |
| ``drivers`` | the installed MgmtDriver files, where a VNFD wants them, the Vnflcm hooks |
| ``build`` | a source directory to a package |
| ``problems`` | what ``validate`` reports: file, object, field, message |
| ``integrity`` | archive names, TOSCA.meta, every hash block |
| ``tacker_checks`` | Tacker's own upload, hash-block and MgmtDriver checks, called offline |
| ``vnfd`` | flavours parsed and translated; hooks against the registered drivers |
| ``manifests`` | Kubernetes manifests against the ``kubernetes`` client models |
| ``placement`` | ``hwaffinity plan`` over a CNF package's manifests |
| ``validate`` | every check over one package |

The package formats they read and write (TOSCA.meta, zip): ``vnfpackage/``.
See doc/csar.md.
"""
