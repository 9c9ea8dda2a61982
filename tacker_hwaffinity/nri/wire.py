"""Protocol Buffers wire format (proto3), driven by small schema tables: no code generation.

A message type is a ``Message`` naming its fields: ``Field(number, name, kind)``
where KIND is a scalar name (``"string"``, ``"bytes"``, ``"bool"``, ``"int32"``,
``"int64"``, ``"uint32"``, ``"uint64"``, ``"enum"``), another ``Message``, or
``Map(key kind, value kind)``. Decoded messages are plain dicts holding the
fields that were on the wire (absent scalars read as their zero value through
``get``); fields the schema does not name are skipped, as a proto3 reader does,
so a newer peer's additions are harmless. Encoding omits zero scalars and empty
lists/maps (proto3's implicit presence) and writes a sub-message whenever it is
not None, so an empty ``{}`` is sent as present.

Bounds: a decoder is given bytes already bounded by the framing (ttrpc's 4 MiB);
nesting deeper than ``MAX_DEPTH`` or a length running past the buffer raises
``WireError`` rather than recursing or slicing silently. The time a decode takes
grows with the fields on the wire (skipped ones too: a container's args and env, a
pod's labels, which the pod's creator chooses): a message type may cap its fields
(``Message(max_fields=N)``, counted with every field and map entry of its own level),
and a repeated field may be ``isolated``: an element over its cap, or otherwise
unreadable, is that element's error (``{INVALID: why}``), not the whole message's.
"""
import struct

MAX_DEPTH = 32
INVALID = "_invalid"        # the key of an isolated element that could not be read
_SIGNED = {"int32", "int64", "enum"}
_VARINT = {"bool", "int32", "int64", "uint32", "uint64", "enum"}


class WireError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


class Field:
    __slots__ = ("number", "name", "kind", "repeated", "isolated")

    def __init__(self, number, name, kind, repeated=False, isolated=False):
        self.number, self.name, self.kind, self.repeated = number, name, kind, repeated
        self.isolated = isolated    # repeated messages: a bad element is its own error


class Map:
    """``map<K, V>``: on the wire, repeated entries {1: key, 2: value}."""

    __slots__ = ("key", "value", "entry", "strings")

    def __init__(self, key, value):
        self.key, self.value = key, value
        self.entry = Message("entry", [Field(1, "key", key), Field(2, "value", value)])
        self.strings = key == value == "string"     # decoded by _string_entry


class Message:
    """One message type: its fields by number and by name."""

    def __init__(self, name, fields=(), max_fields=None):
        self.name = name
        self.max_fields = max_fields    # fields (map entries included) it may hold
        self.by_number = {}
        self.by_name = {}
        self.define(fields)

    def define(self, fields):
        """Add FIELDS (so that recursive and forward-declared types can be built)."""
        for f in fields:
            self.by_number[f.number] = f
            self.by_name[f.name] = f
        self.ordered = sorted(self.by_number.values(), key=lambda f: f.number)
        return self

    def __repr__(self):
        return "Message(%s)" % self.name

    # -- decoding ------------------------------------------------------
    def decode(self, data, depth=0):
        if depth > MAX_DEPTH:
            raise WireError("%s: nested deeper than %d messages" % (self.name, MAX_DEPTH))
        out = {}
        view = memoryview(data)
        pos, end = 0, len(view)
        by_number = self.by_number
        left = self.max_fields if self.max_fields is not None else end
        while pos < end:
            left -= 1
            if left < 0:
                raise WireError("%s: more than %d fields" % (self.name, self.max_fields))
            # one-byte varints (tags of fields 1-15, lengths under 128) read inline: a
            # message of many small fields (a container's args or env, a pod's
            # annotations) costs one pass of this loop per field, nothing more
            tag = view[pos]
            pos += 1
            if tag & 0x80:
                tag, pos = _varint(view, pos - 1)
            number, wtype = tag >> 3, tag & 7
            if number == 0:
                raise WireError("%s: field number 0" % self.name)
            field = by_number.get(number)
            if wtype == 2:
                if pos >= end:
                    raise WireError("truncated varint")
                size = view[pos]
                pos += 1
                if size & 0x80:
                    size, pos = _varint(view, pos - 1)
                if pos + size > end:
                    raise WireError("%s: field %d runs past the message" % (self.name, number))
                if field is None:
                    pos += size
                    continue
                raw, pos = view[pos:pos + size], pos + size
            else:
                raw, pos = self._fixed_or_varint(view, pos, end, wtype)
            if field is not None:
                self._store(out, field, wtype, raw, depth)
        return out

    def _fixed_or_varint(self, view, pos, end, wtype):
        """(value, next position) of a field of wire type WTYPE (not 2) at POS."""
        if wtype == 0:
            return _varint(view, pos)
        if wtype == 1:
            if pos + 8 > end:
                raise WireError("%s: truncated fixed64" % self.name)
            return struct.unpack_from("<Q", view, pos)[0], pos + 8
        if wtype == 5:
            if pos + 4 > end:
                raise WireError("%s: truncated fixed32" % self.name)
            return struct.unpack_from("<I", view, pos)[0], pos + 4
        raise WireError("%s: wire type %d (groups are not supported)" % (self.name, wtype))

    def _store(self, out, field, wtype, raw, depth):
        kind = field.kind
        if isinstance(kind, Map):
            if wtype != 2:
                raise WireError("%s.%s: a map entry must be length-delimited"
                                % (self.name, field.name))
            if kind.strings:
                key, value = _string_entry(raw)
                out.setdefault(field.name, {})[key] = value
                return
            entry = kind.entry.decode(raw, depth + 1)
            value = entry.get("value")
            if value is None:
                value = {} if isinstance(kind.value, Message) else _zero(kind.value)
            out.setdefault(field.name, {})[entry.get("key", _zero(kind.key))] = value
            return
        if field.repeated and wtype == 2 and kind in _VARINT:     # packed
            items, pos, view = [], 0, raw
            while pos < len(view):
                v, pos = _varint(view, pos)
                items.append(_scalar(kind, v))
            out.setdefault(field.name, []).extend(items)
            return
        if field.isolated:
            try:
                value = self._value(field, wtype, raw, depth)
            except WireError as e:
                value = {INVALID: str(e)}
        else:
            value = self._value(field, wtype, raw, depth)
        if field.repeated:
            out.setdefault(field.name, []).append(value)
        else:
            out[field.name] = value

    def _value(self, field, wtype, raw, depth):
        kind = field.kind
        if isinstance(kind, Message):
            if wtype != 2:
                raise WireError("%s.%s: expected a message" % (self.name, field.name))
            return kind.decode(raw, depth + 1)
        if kind == "string":
            if wtype != 2:
                raise WireError("%s.%s: expected a string" % (self.name, field.name))
            try:
                return bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                raise WireError("%s.%s: not UTF-8" % (self.name, field.name))
        if kind == "bytes":
            if wtype != 2:
                raise WireError("%s.%s: expected bytes" % (self.name, field.name))
            return bytes(raw)
        if wtype != 0:
            raise WireError("%s.%s: expected a varint" % (self.name, field.name))
        return _scalar(kind, raw)

    # -- encoding ------------------------------------------------------
    def encode(self, msg):
        """MSG (a dict) in field-number order, as protobuf's own encoders write it."""
        unknown = msg.keys() - self.by_name.keys()
        if unknown:
            raise KeyError("%s has no field %r" % (self.name, sorted(unknown)[0]))
        out = bytearray()
        for field in self.ordered:
            value = msg.get(field.name)
            if value is not None:
                _encode_field(out, field, value)
        return bytes(out)


def _encode_field(out, field, value):
    kind = field.kind
    if value is None:
        return
    if isinstance(kind, Map):
        for k in sorted(value):
            body = kind.entry.encode({"key": k, "value": value[k]})
            _tag(out, field.number, 2)
            _put_varint(out, len(body))
            out += body
        return
    if field.repeated:
        for item in value:
            _encode_one(out, field.number, kind, item, force=True)
        return
    _encode_one(out, field.number, kind, value, force=False)


def _encode_one(out, number, kind, value, force):
    if isinstance(kind, Message):
        body = kind.encode(value)
        _tag(out, number, 2)
        _put_varint(out, len(body))
        out += body
    elif kind in ("string", "bytes"):
        if not value and not force:
            return
        body = value.encode("utf-8") if kind == "string" else bytes(value)
        _tag(out, number, 2)
        _put_varint(out, len(body))
        out += body
    else:
        value = int(value)
        if not value and not force:
            return
        _tag(out, number, 0)
        _put_varint(out, value & 0xFFFFFFFFFFFFFFFF)


def _string_entry(raw):
    """(key, value) of a map<string, string> entry, as ``Map.entry.decode`` reads it;
    the usual layout (key then value, lengths under 128) read inline."""
    end = len(raw)
    try:
        if end >= 2 and raw[0] == 0x0a and raw[1] < 0x80:
            k_end = 2 + raw[1]
            if k_end == end:
                return bytes(raw[2:]).decode("utf-8"), ""
            if k_end + 2 <= end and raw[k_end] == 0x12 and raw[k_end + 1] < 0x80 \
                    and k_end + 2 + raw[k_end + 1] == end:
                return (bytes(raw[2:k_end]).decode("utf-8"),
                        bytes(raw[k_end + 2:]).decode("utf-8"))
    except UnicodeDecodeError:
        raise WireError("entry: a key or value that is not UTF-8")
    entry = _STRING_ENTRY.decode(raw)
    return entry.get("key", ""), entry.get("value", "")


def _tag(out, number, wtype):
    _put_varint(out, number << 3 | wtype)


def _put_varint(out, value):
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _varint(view, pos):
    result = shift = 0
    end = len(view)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        b = view[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def _scalar(kind, v):
    if kind == "bool":
        return bool(v)
    v &= 0xFFFFFFFFFFFFFFFF
    if kind in _SIGNED:
        if v >= 1 << 63:
            v -= 1 << 64
        if kind != "int64" and not -(1 << 31) <= v < 1 << 31:
            v = (v + (1 << 31)) % (1 << 32) - (1 << 31)
    elif kind == "uint32":
        v &= 0xFFFFFFFF
    return v


def _zero(kind):
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    if kind == "bool":
        return False
    return 0


_STRING_ENTRY = Message("entry", [Field(1, "key", "string"), Field(2, "value", "string")])
