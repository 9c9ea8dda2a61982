"""The intake: every way objects come into the ``hwaffinity`` commands.

One front door for files, directories, standard input ('-') and a live API server
(a kubeconfig): the kept-fields pruning, the schema check, the pod bound (--max-pods),
located errors, and one typed result (``read.Intake``) gathering the notes and
warnings of every source. Modules, one job each:

* ``source``: the typed source values (``Files``, ``Live``) and how a command's
  flags resolve to one, as kubectl finds its kubeconfig;
* ``files``: what a cluster or workload file must hold to be one;
* ``live``: the objects of a live API server, connection problems as bad input;
* ``read``: the entry points: ``cluster``, ``objects``, ``workloads``,
  ``manifests``, ``documents`` and ``profile``, each returning an ``Intake``.

Adapter level: it may use objects/, scheduling/, kube/, errors and extras; cli/
uses it, never the other way.
"""
