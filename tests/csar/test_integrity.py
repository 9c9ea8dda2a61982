"""Any change to any hashed byte is caught, at the right block, by us and by Tacker."""
import os
import tempfile
import zipfile

from hypothesis import HealthCheck, given, settings, strategies as st

from csar_fixtures import META, members, rewrite
from tacker_hwaffinity.csar import integrity
from tacker_hwaffinity.vnfpackage import meta


def _artifact_problems(path):
    problems, notes = [], []
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as root:
        names = integrity.archive(z, problems)
        blocks = integrity.tosca_meta(z, names, problems)
        integrity.artifacts(blocks, names, z, path, os.path.realpath(root), problems, notes)
    return problems


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_flipped_byte_of_any_artifact_is_caught(vnf_a_zip, tmp_path_factory, data):
    got = members(vnf_a_zip)
    hashed = sorted(b.source for b in meta.parse(got[META].decode())[1:])
    name = data.draw(st.sampled_from(hashed))
    at = data.draw(st.integers(0, len(got[name]) - 1))
    flip = data.draw(st.integers(1, 255))
    body = bytearray(got[name])
    body[at] ^= flip
    bad = rewrite(vnf_a_zip, tmp_path_factory.mktemp("flip") / "bad.zip",
                  replace={name: bytes(body)})
    (problem,) = _artifact_problems(bad)
    assert (problem.source, problem.field) == (META, "Hash")
    assert problem.obj.endswith("(%s)" % name)
    assert "; Tacker: The hash " in problem.message


def test_clean_package_has_no_artifact_problem(vnf_a_zip):
    assert _artifact_problems(vnf_a_zip) == []
