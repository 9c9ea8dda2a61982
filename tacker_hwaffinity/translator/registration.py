"""Install the extension into the loaded heat-translator, and take it out.

Two changes to ``translator.hot.translate_node_templates``; nothing is
copied or forked:

1. ``TOSCA_TO_HOT_TYPE``, heat-translator's extension point, maps the
   SOL001 AntiAffinityRule and AffinityRule to our placeholder classes
   (:mod:`resources`).
2. ``TranslateNodeTemplates.translate`` is wrapped. Before heat-translator
   runs, every policy type of the template derived from those two is mapped
   to the same class: heat-translator itself would fail with ``KeyError``
   (it aliases derived types only for a few TOSCA base policies, and not at
   all when an intermediate type was aliased before). After it ran,
   :func:`extension.apply` completes the result: the one point where every
   policy has been handled.

``register()`` is idempotent and cheap; ``unregister()`` restores both and
removes the aliases it caused.
"""
import threading

_lock = threading.Lock()
_saved = None       # what register() replaced, for unregister()


def _modules():
    from translator.hot import translate_node_templates as tnt
    return tnt


def is_registered():
    return _saved is not None


def register():
    """Install the extension (idempotent). Returns True if it was installed now."""
    global _saved
    with _lock:
        if _saved is not None:
            return False
        tnt = _modules()
        from tacker_hwaffinity.translator import extension
        from tacker_hwaffinity.translator.resources import BY_KIND, CLASSES
        from tacker_hwaffinity.translator.rules import rule_kinds

        original = tnt.TranslateNodeTemplates.translate
        saved = {"translate": original, "types": {}}
        for cls in CLASSES:
            saved["types"][cls.toscatype] = tnt.TOSCA_TO_HOT_TYPE.get(cls.toscatype)
            tnt.TOSCA_TO_HOT_TYPE[cls.toscatype] = cls

        def translate(self):
            kinds = rule_kinds(self.policies)
            for toscatype, kind in kinds.items():
                if kind is not None:
                    tnt.TOSCA_TO_HOT_TYPE[toscatype] = BY_KIND[kind]
                elif tnt.TOSCA_TO_HOT_TYPE.get(toscatype) in CLASSES:
                    # An alias left by another template where this type name
                    # meant a rule; here it does not.
                    del tnt.TOSCA_TO_HOT_TYPE[toscatype]
            return extension.apply(self, original(self), kinds)

        tnt.TranslateNodeTemplates.translate = translate
        _saved = saved
        return True


def unregister():
    """Restore heat-translator's own behaviour. Returns True if it was installed."""
    global _saved
    with _lock:
        if _saved is None:
            return False
        tnt = _modules()
        from tacker_hwaffinity.translator.resources import CLASSES

        tnt.TranslateNodeTemplates.translate = _saved["translate"]
        # Our classes and the aliases of derived types.
        for key in [k for k, v in tnt.TOSCA_TO_HOT_TYPE.items() if v in CLASSES]:
            del tnt.TOSCA_TO_HOT_TYPE[key]
        for toscatype, cls in _saved["types"].items():
            if cls is not None:
                tnt.TOSCA_TO_HOT_TYPE[toscatype] = cls
        _saved = None
        return True
