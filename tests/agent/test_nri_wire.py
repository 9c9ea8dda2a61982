"""The NRI protocol's own code against references: protobuf's runtime for the wire
format, ttrpc's and NRI's framing by their published layouts."""
import socket
import struct
import threading

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.nri import api, ttrpc
from tacker_hwaffinity.nri.mux import MAX_CHUNK, Mux
from tacker_hwaffinity.nri.wire import Field, Map, Message, WireError

# -- the reference: the same messages described to Google's protobuf runtime ----------
_T = descriptor_pb2.FieldDescriptorProto


def _reference():
    f = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax="proto3")
    cpu = f.message_type.add(name="LinuxCPU")
    cpu.field.add(name="cpus", number=6, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    cpu.field.add(name="mems", number=7, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    sb = f.message_type.add(name="PodSandbox")
    sb.field.add(name="id", number=1, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    sb.field.add(name="uid", number=3, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    entry = sb.nested_type.add(name="AnnotationsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    sb.field.add(name="annotations", number=6, type=_T.TYPE_MESSAGE, label=_T.LABEL_REPEATED,
                 type_name=".t.PodSandbox.AnnotationsEntry")
    sb.field.add(name="pid", number=9, type=_T.TYPE_UINT32, label=_T.LABEL_OPTIONAL)
    sb.field.add(name="ips", number=10, type=_T.TYPE_STRING, label=_T.LABEL_REPEATED)
    st_ = f.message_type.add(name="Status")
    st_.field.add(name="code", number=1, type=_T.TYPE_INT32, label=_T.LABEL_OPTIONAL)
    st_.field.add(name="big", number=2, type=_T.TYPE_INT64, label=_T.LABEL_OPTIONAL)
    st_.field.add(name="cpu", number=3, type=_T.TYPE_MESSAGE, label=_T.LABEL_OPTIONAL,
                  type_name=".t.LinuxCPU")
    st_.field.add(name="ok", number=4, type=_T.TYPE_BOOL, label=_T.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName("t." + n))
            for n in ("PodSandbox", "Status", "LinuxCPU")}


REF = _reference()
CPU = Message("LinuxCPU", [Field(6, "cpus", "string"), Field(7, "mems", "string")])
SANDBOX = Message("PodSandbox", [Field(1, "id", "string"), Field(3, "uid", "string"),
                                 Field(6, "annotations", Map("string", "string")),
                                 Field(9, "pid", "uint32"), Field(10, "ips", "string", True)])
STATUS = Message("Status", [Field(1, "code", "int32"), Field(2, "big", "int64"),
                            Field(3, "cpu", CPU), Field(4, "ok", "bool")])
text = st.text(max_size=20)


@settings(max_examples=200, deadline=None)
@given(id_=text, uid=text, ann=st.dictionaries(text, text, max_size=4),
       pid=st.integers(0, 2**32 - 1), ips=st.lists(text, max_size=3))
def test_sandbox_bytes_equal_protobuf_both_ways(id_, uid, ann, pid, ips):
    ours = {"id": id_, "uid": uid, "annotations": ann, "pid": pid, "ips": ips}
    ref = REF["PodSandbox"](id=id_, uid=uid, annotations=ann, pid=pid, ips=ips)
    decoded = SANDBOX.decode(ref.SerializeToString())
    assert decoded.get("id", "") == id_ and decoded.get("uid", "") == uid
    assert decoded.get("annotations", {}) == ann and decoded.get("pid", 0) == pid
    assert decoded.get("ips", []) == ips
    back = REF["PodSandbox"]()
    back.ParseFromString(SANDBOX.encode(ours))
    assert back == ref


@settings(max_examples=200, deadline=None)
@given(code=st.integers(-2**31, 2**31 - 1), big=st.integers(-2**63, 2**63 - 1),
       ok=st.booleans(), cpus=st.none() | text)
def test_signed_integers_and_nested_messages_equal_protobuf(code, big, ok, cpus):
    ours = {"code": code, "big": big, "ok": ok}
    kw = dict(code=code, big=big, ok=ok)
    if cpus is not None:
        ours["cpu"] = {"cpus": cpus}
        kw["cpu"] = REF["LinuxCPU"](cpus=cpus)
    ref = REF["Status"](**kw)
    assert STATUS.encode(ours) == ref.SerializeToString()
    got = STATUS.decode(ref.SerializeToString())
    assert got.get("code", 0) == code and got.get("big", 0) == big and got.get("ok", False) == ok


def test_unknown_fields_are_skipped_and_bad_bytes_named():
    newer = REF["PodSandbox"](id="x", pid=7).SerializeToString() + b"\xa0\x06\x05"  # field 100
    assert SANDBOX.decode(newer) == {"id": "x", "pid": 7}
    with pytest.raises(WireError, match="runs past"):
        SANDBOX.decode(b"\x0a\x05ab")
    with pytest.raises(WireError, match="truncated varint"):
        SANDBOX.decode(b"\x48\xff")
    nested = b""
    for _ in range(40):
        nested = b"\x1a" + bytes([len(nested)]) + nested if len(nested) < 128 else nested
    deep = Message("D")
    deep.define([Field(3, "d", deep)])
    with pytest.raises(WireError, match="nested deeper"):
        deep.decode(nested)


def test_ttrpc_frames_have_the_published_header():
    data = ttrpc.request_frame(3, api.PLUGIN_SERVICE, "Configure", b"\x0a\x01x")
    length, sid, kind, flags = struct.unpack(">IIBB", data[:10])
    assert (length, sid, kind, flags) == (len(data) - 10, 3, 1, 0)
    req = ttrpc.Request.decode(data[10:])
    assert req == {"service": "nri.pkg.api.v1alpha1.Plugin", "method": "Configure",
                   "payload": b"\x0a\x01x"}
    reader = ttrpc.FrameReader()
    assert reader.feed(data[:7]) == [] and reader.feed(data[7:] + data[:3])[0][0] == 3
    with pytest.raises(ttrpc.ProtocolError, match="ttrpc allows"):
        ttrpc.FrameReader().feed(struct.pack(">IIBB", (4 << 20) + 1, 1, 1, 0))
    code, message, payload = ttrpc.parse_response(ttrpc.response_frame(
        5, code=ttrpc.UNIMPLEMENTED, message="no")[10:])
    assert (code, message, payload) == (12, "no", b"")


def test_mux_splits_large_writes_into_bounded_chunks_and_reassembles_them():
    a, b = socket.socketpair()
    got, done = bytearray(), threading.Event()

    def sink(data):
        got.extend(data)
        if len(got) >= MAX_CHUNK + 5:
            done.set()
    reader = Mux(b, {2: sink}, lambda e: None)
    reader.start()
    raw = []

    class Recording:
        def sendall(self, data):
            raw.append(data[:8])
            a.sendall(data)

        def __getattr__(self, name):
            return getattr(a, name)
    writer = Mux(Recording(), {}, lambda e: None)
    payload = bytes(range(256)) * ((MAX_CHUNK + 5) // 256 + 1)
    writer.send(2, payload[:MAX_CHUNK + 5])
    assert done.wait(5)
    assert bytes(got) == payload[:MAX_CHUNK + 5]
    assert [struct.unpack(">II", h) for h in raw] == [(2, MAX_CHUNK), (2, 5)]
    writer.close()
    reader.close()


def test_event_mask_is_nri_bits():
    assert api.event_mask(api.CREATE_CONTAINER) == 1 << 3
    assert api.event_mask(api.RUN_POD_SANDBOX, api.REMOVE_CONTAINER) == 1 | 1 << 10
