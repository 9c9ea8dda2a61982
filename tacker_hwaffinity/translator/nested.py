"""The nested templates of ScalingAspects, as data we can wire into.

heat-translator serialises each ``<aspect>.hot.yaml`` to a YAML string while
it handles the ScalingAspects policy, and keeps the string in a dict shared by
the aspect's scale-out and scale-in resources. A server that moved there can
only reach a main-template resource (its server group) or parameter (its
zone) through a parameter of the nested template, which the
``OS::Heat::AutoScalingGroup`` passes down in ``resource.properties``. This
module parses those strings, adds such parameters and writes back the
templates it changed (only those; the others stay byte for byte).
"""
import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml
from tacker_hwaffinity.translator import names


# libyaml when PyYAML has it: these templates are written on every translation, and
# the pure-Python codec would double our share of its time.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text, file_name):
    """The nested template FILE_NAME heat-translator wrote as TEXT, read as Heat reads it
    (``2013-05-23`` stays a string) within ``package_yaml``'s bounds: its values come
    from the package (shared ones written as aliases)."""
    return package_yaml.loads(text, "nested template %s" % file_name, dates=False)


def dump(data):
    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, sort_keys=False)


class NestedTemplates:
    """Index of the AutoScalingGroup nested templates in a resource list."""

    def __init__(self, resources):
        self._holders = {}      # file name -> dict shared by the aspect's resources
        self._asgs = {}         # file name -> the AutoScalingGroup HotResource
        for res in resources:
            held = getattr(res, "nested_template", None)
            if getattr(res, "toscatype", None) == names.SCALING_ASPECTS \
                    and isinstance(held, dict):
                for file_name in held:
                    self._holders.setdefault(file_name, held)
            elif res.type == names.AUTOSCALING_GROUP:
                member = res.properties.get("resource")
                if isinstance(member, dict) and isinstance(member.get("type"), str):
                    self._asgs[member["type"]] = res
        self._data = {}
        self._changed = set()
        self._added = {}        # file name -> parameters we declared
        self._server_file = None

    def _template(self, file_name):
        if file_name not in self._data:
            self._data[file_name] = load(self._holders[file_name][file_name], file_name)
        return self._data[file_name]

    def locate(self, server):
        """File name of the nested template holding OS::Nova::Server ``server``."""
        if self._server_file is None:
            self._server_file = {}
            for file_name in self._holders:
                if file_name not in self._asgs:
                    continue
                resources = self._template(file_name).get("resources") or {}
                for name, res in resources.items():
                    if isinstance(res, dict) and res.get("type") == names.SERVER:
                        self._server_file.setdefault(name, file_name)
        return self._server_file.get(server)

    def asg_name(self, file_name):
        return self._asgs[file_name].name

    def server_properties(self, file_name, server):
        """The (mutable) properties of a server of a nested template."""
        self._changed.add(file_name)
        res = self._template(file_name)["resources"][server]
        props = res.get("properties")
        if not isinstance(props, dict):
            props = res["properties"] = {}
        return props

    def pass_down(self, file_name, param, value, param_type, policy):
        """Declare ``param`` in the nested template; the ASG passes ``value``."""
        data = self._template(file_name)
        params = data.get("parameters")
        if not isinstance(params, dict):
            params = data["parameters"] = {}
        ours = self._added.setdefault(file_name, set())
        if param in params and param not in ours:
            raise InputError("nested template %s already has a parameter %s; rename the "
                             "policy" % (file_name, param),
                             obj='policy "%s"' % policy, field="name")
        params[param] = {"type": param_type}
        ours.add(param)
        member = self._asgs[file_name].properties["resource"]
        passed = member.get("properties")
        if not isinstance(passed, dict):
            passed = member["properties"] = {}
        passed[param] = value
        self._changed.add(file_name)

    def flush(self):
        """Write the changed templates back where heat-translator reads them."""
        for file_name in sorted(self._changed):
            self._holders[file_name][file_name] = dump(self._data[file_name])
        self._changed.clear()
