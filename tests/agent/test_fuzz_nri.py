"""Fuzzing what the container runtime sends the NRI plugin (tests/fuzzing.py): the
protobuf wire decoders, ttrpc's framing, and the plugin's answer to any request body
(handled by the real NriAgent). Random bytes and valid messages with random edits; the
decoders let only their own input errors escape, and the plugin answers every request."""
import logging

from hypothesis import example, given, strategies as st
from prometheus_client import CollectorRegistry

import fuzzing
from tacker_hwaffinity.agent.node import NodeState
from tacker_hwaffinity.agent.checkpoint import Checkpoint
from tacker_hwaffinity.agent.nri_agent import NriAgent
from tacker_hwaffinity.agent.recorder import Recorder
from tacker_hwaffinity.agent.runner import Metrics
from tacker_hwaffinity.nri import api, ttrpc
from tacker_hwaffinity.nri.plugin import Plugin
from tacker_hwaffinity.nri.wire import WireError

from .nri_runtime import container, sandbox
from .test_agent_node import server

LOG = logging.getLogger("test.fuzz.nri")
POD = sandbox("cnf", "u1", "guaranteed",
              annotations={"cri-resource-manager.intel.com/affinity": "c: [d]"})
VALID = {
    "CreateContainer": {"pod": POD, "container": container(POD, "c", "c1", milli=2000,
                                                           limit_milli=2000, memory=1 << 30)},
    "Synchronize": {"pods": [POD], "containers": [container(POD, "c", "c1", milli=500,
                                                            state=api.CONTAINER_RUNNING)]},
    "UpdateContainer": {"pod": POD, "container": container(POD, "c", "c1", milli=500),
                        "linux_resources": {"cpu": {"cpus": "0-3"}}},
    "StopContainer": {"pod": POD, "container": container(POD, "c", "c1")},
    "StateChange": {"event": api.REMOVE_POD_SANDBOX, "pod": POD},
    "Configure": {"runtime_name": "containerd", "request_timeout": 2000},
}
ENCODED = {m: api.PLUGIN_METHODS[m][0].encode(msg) for m, msg in VALID.items()}


@st.composite
def mutated(draw, seeds):
    """A valid encoding with a few random byte edits."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 4))
        data[at:at + cut] = draw(st.binary(max_size=3))
    return bytes(data)


BODIES = st.one_of(mutated(sorted(ENCODED.values())), st.binary(max_size=512))
NO_ID = api.CreateContainerRequest.encode(
    {"pod": POD, "container": dict(VALID["CreateContainer"]["container"], id="")})


@given(BODIES, st.sampled_from(sorted(api.PLUGIN_METHODS)))
@example(NO_ID, "CreateContainer")
@example(b"\x0a" * 200, "Synchronize")
def test_fuzz_nri_messages(data, method):
    fuzzing.bounded(api.PLUGIN_METHODS[method][0].decode, data, errors=(WireError,))


FRAMES = [ttrpc.request_frame(1, api.PLUGIN_SERVICE, m, body) for m, body in
          sorted(ENCODED.items())]


@given(st.one_of(mutated(FRAMES), st.binary(max_size=256)))
@example(b"\xff\xff\xff\xff" + b"\x00" * 6)
def test_fuzz_ttrpc_frames(data):
    def read(data):
        for _sid, kind, _flags, body in ttrpc.FrameReader().feed(data):
            if kind == ttrpc.REQUEST:
                ttrpc.parse_request(body)
            else:
                ttrpc.parse_response(body)
    fuzzing.bounded(read, data, errors=(ttrpc.ProtocolError,))


class _Quiet:
    def annotate(self, *a):
        pass
    event = annotate


def _plugin():
    machine = server()
    metrics = Metrics(CollectorRegistry())
    agent = NriAgent(lambda: NodeState(machine), Checkpoint(None),
                     Recorder(_Quiet(), metrics, LOG), metrics, log=LOG)
    return Plugin(agent, log=LOG)


PLUGIN = _plugin()


@given(st.sampled_from(sorted(ENCODED)).flatmap(
    lambda m: st.tuples(st.just(m), st.one_of(mutated([ENCODED[m]]), st.binary(max_size=256)))))
@example(("CreateContainer", NO_ID))
def test_fuzz_the_plugin_answers_every_request(case):
    """Whatever the body, a response frame on the request's stream (issue #36: a
    CreateContainer without an id broke every later request)."""
    method, body = case

    def answer(body, method=method):
        frame = PLUGIN._answer(7, {"service": api.PLUGIN_SERVICE, "method": method,
                                   "payload": body})
        ((sid, kind, _flags, data),) = ttrpc.FrameReader().feed(frame)
        assert sid == 7 and kind == ttrpc.RESPONSE
        return ttrpc.parse_response(data)
    fuzzing.bounded(answer, body, seconds=0.2, mib=32)
    code, _, payload = answer(ENCODED["CreateContainer"], "CreateContainer")
    assert code == ttrpc.OK                             # and the next one is answered
