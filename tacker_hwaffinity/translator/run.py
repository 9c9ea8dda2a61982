"""Parse and translate a loaded VNFD: tosca-parser, then heat-translator.

The same calls as Tacker's v1 path (``ToscaTemplate`` -> ``TOSCATranslator``
-> ``translate_to_yaml_files_dict``), with every failure turned into one
:class:`InputError` line that names the file.
"""
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tacker_hwaffinity.errors import InputError

if TYPE_CHECKING:     # the loader is imported when a VNFD is parsed, not before
    from tacker_hwaffinity.translator.loader import Vnfd

MAIN_TEMPLATE = "main.yaml"


def quiet_libraries() -> None:
    """tosca-parser and heat-translator log every problem they raise; the
    error we raise says it once. Keep their records off the terminal."""
    for name in ("tosca", "heat-translator"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _one_line(message):
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    if len(lines) > 1 and "failed validation" in lines[0]:
        lines = lines[1:]
    return "; ".join(lines)


def parse(vnfd: "Vnfd") -> Any:
    """ToscaTemplate of a :class:`loader.Vnfd`."""
    from toscaparser.common.exception import ExceptionCollector, ValidationError
    from toscaparser.tosca_template import ToscaTemplate
    from tacker_hwaffinity.translator import loader
    try:
        with loader.offline():
            return ToscaTemplate(parsed_params=dict(vnfd.parsed_params), a_file=False,
                                 yaml_dict_tpl=vnfd.template, local_defs=vnfd.local_defs)
    except ValidationError:
        # The collected errors without their stack traces.
        report = "; ".join(ExceptionCollector.getExceptionsReport(False))
        raise InputError("tosca-parser rejected the VNFD: %s" % _one_line(report),
                         source=vnfd.path)
    except Exception as e:  # noqa: BLE001 - tosca-parser's many error types: one InputError
        raise InputError("tosca-parser failed on the VNFD: %s: %s"
                         % (type(e).__name__, _one_line(e)), source=vnfd.path)


def translate(tosca: Any, parsed_params: Mapping[str, Any], source: str | None = None,
              main_name: str = MAIN_TEMPLATE) -> dict[str, str]:
    """{file name: HOT text}: the main template and the nested ones."""
    from translator.hot.tosca_translator import TOSCATranslator
    try:
        files = TOSCATranslator(tosca, dict(parsed_params)).translate_to_yaml_files_dict(
            main_name)
    except InputError as e:
        raise e.located(source=source)
    except Exception as e:  # noqa: BLE001 - heat-translator's own failures: one InputError
        raise InputError("heat-translator failed: %s: %s"
                         % (type(e).__name__, _one_line(e) or "(no message)"),
                         source=source)
    return files


def translate_vnfd(vnfd, main_name=MAIN_TEMPLATE):
    """Parse and translate a :class:`loader.Vnfd` (with the extension if registered)."""
    return translate(parse(vnfd), vnfd.parsed_params, source=vnfd.path,
                     main_name=main_name)
