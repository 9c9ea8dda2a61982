"""Offline HOT validation with the real Heat engine (no servers, no cloud).

Run with the python of the venv built by ``tools/openstack-venv.sh``; the
pytest side calls it through ``osharness.validate_heat()``. Protocol: one
JSON document on stdin, one on stdout::

    stdin:  {"bundles": [BUNDLE, ...]}       (or a single BUNDLE)
    BUNDLE: {"template":    "<HOT YAML/JSON text>" | {...},
             "files":       {"worker.yaml": "<text>" | {...}, ...},   optional
             "environment": "<env YAML text>" | {...},               optional
             "parameters":  {"name": value, ...}}                    optional
    stdout: {"results": [{"valid": bool, "errors": ["...", ...],
                          "server_groups": {"<resource>": ["<policy>", ...], ...}}, ...],
             "seconds": float}

``server_groups``: the policies each ``OS::Nova::ServerGroup`` of the top template
resolves to with the bundle's parameters (conditions and intrinsic functions applied),
for a valid bundle.

Each bundle goes through exactly what ``stack create`` validates:

1. ``EngineService.validate_template(ctx, template, params, files,
   show_nested=True)`` (= ``POST /v1/{tenant}/validate``: template syntax,
   resource types, nested templates, but not property values), then
2. ``Stack.validate()`` on the parsed stack (properties and their allowed
   values, nested template resources incl. ASG members, intrinsic
   functions, outputs).

Only look-ups that would need a live cloud are stubbed, all to "exists":
Glance images (``ImageConstraint``, ``get_image``: active, min_ram/disk 0),
Nova flavors (``FlavorConstraint``, ``get_flavor``: 64 GiB RAM / 1 TB disk),
keypairs and servers, Nova microversion checks (all supported), Neutron
networks/ports/subnets/routers/QoS policies/providers, Cinder volumes and
volume types, Keystone projects. Nested templates must be in ``files``:
anything else is an error ("Could not fetch remote template").
"""
import json
import sys
import time

_T0 = time.monotonic()

# heat.tests.common must come before heat.engine.service: it selects the
# THREADING oslo.service backend, which may only be selected once.
from heat.tests import common  # noqa: E402
from heat.tests import utils  # noqa: E402

from heat.common import environment_format  # noqa: E402
from heat.common import template_format  # noqa: E402
from heat.engine.clients.os import glance  # noqa: E402
from heat.engine.clients.os import nova  # noqa: E402
from heat.engine import service as engine_service  # noqa: E402
import oslo_messaging  # noqa: E402

STUBS = (
    "stub_ImageConstraint_validate", "stub_FlavorConstraint_validate",
    "stub_KeypairConstraint_validate", "stub_ServerConstraint_validate",
    "stub_NetworkConstraint_validate", "stub_PortConstraint_validate",
    "stub_SubnetConstraint_validate", "stub_RouterConstraint_validate",
    "stub_QoSPolicyConstraint_validate", "stub_ProviderConstraint_validate",
    "stub_VolumeConstraint_validate", "stub_VolumeTypeConstraint_validate",
    "stub_KeystoneProjectConstraint",
)


class _Image:
    status = "active"
    min_ram = 0
    min_disk = 0
    size = 1 << 20


class _Flavor:
    ram = 65536
    disk = 1000
    vcpus = 16
    name = "flavor"


class Validator(common.HeatTestCase):
    """HeatTestCase gives a sqlite DB, fake RPC and a mocked keystone."""

    def runTest(self):  # pragma: no cover - never run as a test
        pass

    def setUp(self):
        super().setUp()
        for stub in STUBS:
            getattr(self, stub)()
        self.patchobject(nova.NovaClientPlugin, "is_version_supported", return_value=True)
        self.patchobject(nova.NovaClientPlugin, "get_flavor", return_value=_Flavor())
        self.patchobject(glance.GlanceClientPlugin, "get_image", return_value=_Image())
        self.engine = engine_service.EngineService("validator", "engine")

    def validate(self, bundle):
        try:
            template = _parse_template(bundle["template"])
            files = {name: _text(body) for name, body in (bundle.get("files") or {}).items()}
            env = bundle.get("environment") or {}
            if isinstance(env, str):
                env = environment_format.parse(env)
            env = dict(env)
            if bundle.get("parameters"):
                env["parameters"] = dict(env.get("parameters") or {}, **bundle["parameters"])
        except Exception as exc:  # noqa: BLE001 - a bad bundle is an error, too
            return [_describe(exc)], {}

        ctx = utils.dummy_context()
        try:
            result = self.engine.validate_template(ctx, template, params=env, files=files,
                                                   show_nested=True)
        except oslo_messaging.ExpectedException as exc:
            return [_describe(exc.exc_info[1])], {}
        except Exception as exc:  # noqa: BLE001
            return [_describe(exc)], {}
        if isinstance(result, dict) and "Error" in result:
            return [result["Error"]], {}
        if not isinstance(result, dict):  # a webob error response
            return [str(getattr(result, "explanation", result))], {}

        try:
            stack = utils.parse_stack(template, params=env, files=files)
            stack.validate()
            groups = {name: list(res.properties["policies"] or [])
                      for name, res in stack.items()
                      if res.type() == "OS::Nova::ServerGroup"}
        except Exception as exc:  # noqa: BLE001
            return [_describe(exc)], {}
        return [], groups


def _parse_template(template):
    if isinstance(template, str):
        return template_format.parse(template)
    return template


def _text(body):
    return body if isinstance(body, str) else json.dumps(body)


def _describe(exc):
    name = type(exc).__name__
    text = str(exc)
    return text if name in ("StackValidationFailed",) else "%s: %s" % (name, text)


def main():
    request = json.load(sys.stdin)
    bundles = request["bundles"] if "bundles" in request else [request]
    validator = Validator()
    validator.setUp()
    results = []
    for bundle in bundles:
        errors, groups = validator.validate(bundle)
        results.append({"valid": not errors, "errors": errors, "server_groups": groups})
    json.dump({"results": results, "seconds": round(time.monotonic() - _T0, 2)},
              sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
