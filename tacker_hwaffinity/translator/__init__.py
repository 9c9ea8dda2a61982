"""Heat-translator extension: SOL001 (Anti)AffinityRule -> Nova server groups.

Call :func:`register` once per process, before heat-translator translates
(Tacker's MgmtDriver does it when Tacker loads it). From then on every
``TOSCATranslator`` in the process, Tacker's v1 path included, emits

* one ``OS::Nova::ServerGroup`` per ``nfvi_node`` rule, named after the
  policy, with ``scheduler_hints.group`` on every member server, also inside
  the ``OS::Heat::AutoScalingGroup`` nested templates of ScalingAspects;
* ``availability_zone`` per member for ``zone`` rules, from a parameter;
* an error for anything it cannot express (never a silent drop).

This package imports heat-translator only when :func:`register` runs, so the
rest of tacker_hwaffinity works without the ``translator`` extra.
See doc/translator.md.
"""


def register() -> bool:
    """Install the extension into the loaded heat-translator (idempotent)."""
    from tacker_hwaffinity.translator import registration
    return registration.register()


def unregister():
    """Restore heat-translator's own behaviour (idempotent)."""
    from tacker_hwaffinity.translator import registration
    return registration.unregister()


def is_registered():
    """True when :func:`register` is in effect."""
    from tacker_hwaffinity.translator import registration
    return registration.is_registered()
