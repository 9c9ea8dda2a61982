"""ttrpc, containerd's light RPC: 10-byte frames carrying protobuf requests and responses.

A frame is ``length (u32 BE) | stream id (u32 BE) | type (u8) | flags (u8) | data``;
data is at most 4 MiB. A unary call is one Request frame (type 1) on a new odd
stream id from the client and one Response frame (type 2) on the same id.
Request and Response are protobuf messages (``ttrpc.Request``,
``ttrpc.Response`` with a ``google.rpc.Status``); their payloads are the
service's own messages. This module frames and parses; ``mux`` moves the bytes.
"""
import struct

from tacker_hwaffinity.nri.wire import Field as F, Message, WireError

HEADER = struct.Struct(">IIBB")
HEADER_LEN = HEADER.size            # 10
MAX_DATA = 4 << 20
REQUEST, RESPONSE, DATA = 1, 2, 3

# google.golang.org/grpc/codes
OK, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND = 0, 2, 3, 4, 5
UNIMPLEMENTED, INTERNAL, UNAVAILABLE = 12, 13, 14

KeyValue = Message("ttrpc.KeyValue", [F(1, "key", "string"), F(2, "value", "string")])
Request = Message("ttrpc.Request", [
    F(1, "service", "string"), F(2, "method", "string"), F(3, "payload", "bytes"),
    F(4, "timeout_nano", "int64"), F(5, "metadata", KeyValue, repeated=True)])
Status = Message("google.rpc.Status", [F(1, "code", "int32"), F(2, "message", "string")])
Response = Message("ttrpc.Response", [F(1, "status", Status), F(2, "payload", "bytes")])


class ProtocolError(Exception):
    """The peer sent something that is not ttrpc: the connection cannot go on."""


class RemoteError(Exception):
    """A call the peer answered with a non-OK status."""

    def __init__(self, method, code, message):
        super().__init__("%s: status %d: %s" % (method, code, message))
        self.method, self.code, self.message = method, code, message


def frame(stream_id, kind, data, flags=0):
    if len(data) > MAX_DATA:
        raise ValueError("a ttrpc message is at most %d bytes, this one %d"
                         % (MAX_DATA, len(data)))
    return HEADER.pack(len(data), stream_id, kind, flags) + data


def request_frame(stream_id, service, method, payload, timeout_nano=0):
    body = Request.encode({"service": service, "method": method, "payload": payload,
                           "timeout_nano": timeout_nano})
    return frame(stream_id, REQUEST, body)


def response_frame(stream_id, payload=b"", code=OK, message=""):
    msg = {"payload": payload}
    if code != OK:
        msg = {"status": {"code": code, "message": message}}
    return frame(stream_id, RESPONSE, Response.encode(msg))


class FrameReader:
    """Cuts a byte stream into frames: ``feed(bytes)`` -> [(stream id, type, flags, data)]."""

    def __init__(self):
        self._buf = bytearray()

    def feed(self, data):
        self._buf += data
        out = []
        buf = self._buf
        while len(buf) >= HEADER_LEN:
            length, sid, kind, flags = HEADER.unpack_from(buf)
            if length > MAX_DATA:
                raise ProtocolError("a frame of %d bytes (ttrpc allows %d)" % (length, MAX_DATA))
            if len(buf) < HEADER_LEN + length:
                break
            out.append((sid, kind, flags, bytes(buf[HEADER_LEN:HEADER_LEN + length])))
            del buf[:HEADER_LEN + length]
        return out


def parse_request(data):
    try:
        return Request.decode(data)
    except WireError as e:
        raise ProtocolError("a request that is not a ttrpc.Request: %s" % e)


def parse_response(data):
    """(status code, message, payload) of a Response frame's data."""
    try:
        msg = Response.decode(data)
    except WireError as e:
        raise ProtocolError("a response that is not a ttrpc.Response: %s" % e)
    status = msg.get("status") or {}
    return status.get("code", OK), status.get("message", ""), msg.get("payload", b"")
