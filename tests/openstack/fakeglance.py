"""A small fake Glance v2 API over Nova's in-process ``GlanceFixture``, so that an image
a client creates over HTTP is one Nova can boot.

It serves what the harness's clients use, with Glance's wire format:

* version discovery (``/``, ``/versions``; no token, as Glance);
* ``GET /v2/schemas/image(s)``, ``GET /v2/images`` (filters ``name``, ``id``, ``tag``),
  ``GET /v2/images/{id}``;
* ``POST /v2/images``: a ``queued`` image, extra properties kept;
* ``PUT /v2/images/{id}/file``: the data (up to ``MAX_IMAGE_BYTES``, read in chunks);
  the image becomes ``active`` with ``size``, ``checksum`` (MD5) and
  ``os_hash_algo``/``os_hash_value`` (SHA-512, Glance's default ``hashing_algorithm``),
  which is what Tacker compares with a VNFD's ``sw_image_data`` checksum;
* ``DELETE /v2/images/{id}``.

Image import (``web-download``) is not served: this machine reaches no web server to
download from. Everything but discovery is behind the real keystonemiddleware
``auth_token`` (token look-ups answered by Nova's ``AuthTokenFixture``), as
``fakeneutron.py`` is. The bytes uploaded are hashed, not kept: Nova's fake virt driver
never reads an image.
"""
import hashlib
import json
import uuid
from urllib.parse import parse_qs

MAX_IMAGE_BYTES = 64 << 20
CHUNK = 1 << 16
HIDDEN = ("properties", "deleted", "deleted_at", "is_public", "location")


def _iso(value):
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def image_v2(image):
    """Glance v2's JSON of a GlanceFixture image (its properties as top-level keys)."""
    out = {k: _iso(v) for k, v in image.items() if k not in HIDDEN}
    for k, v in (image.get("properties") or {}).items():
        out.setdefault(k, v)
    out.setdefault("visibility", "public")
    out.setdefault("tags", [])
    out.setdefault("owner", None)
    out.setdefault("os_hash_algo", None)
    out.setdefault("os_hash_value", None)
    out["self"] = "/v2/images/%s" % image["id"]
    out["file"] = "/v2/images/%s/file" % image["id"]
    out["schema"] = "/v2/schemas/image"
    return out


IMAGE_SCHEMA = {
    "name": "image",
    "additionalProperties": {"type": "string"},
    "properties": {
        "id": {"type": "string"}, "name": {"type": ["null", "string"]},
        "status": {"type": "string"}, "visibility": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "size": {"type": ["null", "integer"]}, "min_ram": {"type": "integer"},
        "min_disk": {"type": "integer"}, "protected": {"type": "boolean"},
        "container_format": {"type": ["null", "string"]},
        "disk_format": {"type": ["null", "string"]},
        "checksum": {"type": ["null", "string"]},
        "os_hash_algo": {"type": ["null", "string"]},
        "os_hash_value": {"type": ["null", "string"]},
        "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "owner": {"type": ["null", "string"]}, "self": {"type": "string"},
        "file": {"type": "string"}, "schema": {"type": "string"},
    },
    "links": [{"href": "{self}", "rel": "self"}, {"href": "{file}", "rel": "enclosure"},
              {"href": "{schema}", "rel": "describedby"}],
}
# What POST /v2/images takes as itself; any other key is a property (Glance's
# additionalProperties), kept as a string.
CREATE_FIELDS = ("id", "name", "visibility", "tags", "min_ram", "min_disk", "protected",
                 "container_format", "disk_format")


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class FakeGlance:
    """The WSGI app (no authentication: see :func:`make_app`)."""

    def __init__(self, glance_fixture):
        self.fixture = glance_fixture

    def __call__(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "").rstrip("/")
        base = "http://%s%s" % (environ.get("HTTP_HOST", ""), environ.get("SCRIPT_NAME", ""))
        try:
            status, body = self._serve(method, path, base, environ)
        except HTTPError as e:
            status, body = e.status, {"message": str(e), "code": e.status}
        data = b"" if body is None else json.dumps(body).encode()
        headers = [("Content-Length", str(len(data))),
                   ("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        reasons = {200: "OK", 201: "Created", 204: "No Content", 300: "Multiple Choices",
                   400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                   409: "Conflict", 413: "Request Entity Too Large"}
        start_response("%d %s" % (status, reasons.get(status, "")), headers)
        return [data]

    def _serve(self, method, path, base, environ):
        if path in ("", "/versions") and method == "GET":
            return (300 if path == "" else 200), {"versions": [
                {"id": "v2.16", "status": "CURRENT",
                 "links": [{"rel": "self", "href": base + "/v2/"}]}]}
        if path == "/v2/schemas/image" and method == "GET":
            return 200, IMAGE_SCHEMA
        if path == "/v2/schemas/images" and method == "GET":
            return 200, {"name": "images", "properties": {
                "images": {"type": "array", "items": IMAGE_SCHEMA}}}
        if path == "/v2/images":
            if method == "GET":
                return 200, self._list(parse_qs(environ.get("QUERY_STRING", "")))
            if method == "POST":
                return 201, self._create(environ)
            raise HTTPError(405, "method %s not allowed on %s" % (method, path))
        parts = path.split("/")
        if len(parts) in (4, 5) and parts[:3] == ["", "v2", "images"]:
            image = self.fixture.images.get(parts[3])
            if image is None:
                raise HTTPError(404, "No image found with ID %s" % parts[3])
            if len(parts) == 5 and parts[4] == "file" and method == "PUT":
                self._upload(image, environ)
                return 204, None
            if len(parts) == 4 and method == "GET":
                return 200, image_v2(image)
            if len(parts) == 4 and method == "DELETE":
                self.fixture.delete(None, image["id"])
                return 204, None
            raise HTTPError(405, "method %s not allowed on %s" % (method, path))
        raise HTTPError(404, "not found: %s" % path)

    def _list(self, query):
        images = [image_v2(i) for i in self.fixture.images.values()]
        for key in ("name", "id"):
            if key in query:
                wanted = set(query[key])
                images = [i for i in images if i.get(key) in wanted]
        for tag in query.get("tag", ()):
            images = [i for i in images if tag in i["tags"]]
        return {"images": images, "schema": "/v2/schemas/images", "first": "/v2/images"}

    def _create(self, environ):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
        except ValueError:
            raise HTTPError(400, "Malformed request body")
        if not isinstance(body, dict):
            raise HTTPError(400, "the body must be a JSON object")
        image = {k: body[k] for k in CREATE_FIELDS if k in body}
        image.update(status="queued", size=None, checksum=None, os_hash_algo=None,
                     os_hash_value=None, visibility=body.get("visibility", "shared"),
                     tags=list(body.get("tags") or []), min_ram=body.get("min_ram", 0),
                     min_disk=body.get("min_disk", 0),
                     properties={k: str(v) for k, v in body.items()
                                 if k not in CREATE_FIELDS})
        if image.get("id") in self.fixture.images:
            raise HTTPError(409, "Image with identifier %s already exists" % image["id"])
        return image_v2(self.fixture.create(None, image))

    def _upload(self, image, environ):
        if image["status"] != "queued":
            raise HTTPError(409, "Image status transition from %s to saving is not allowed"
                            % image["status"])
        md5, sha512, size = hashlib.md5(), hashlib.sha512(), 0
        stream = environ["wsgi.input"]   # eventlet's: Content-Length or chunked
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_IMAGE_BYTES:
                raise HTTPError(413, "Image exceeds the harness's limit of %d bytes"
                                % MAX_IMAGE_BYTES)
            md5.update(chunk)
            sha512.update(chunk)
        image.update(status="active", size=size, checksum=md5.hexdigest(),
                     os_hash_algo="sha512", os_hash_value=sha512.hexdigest())


def make_app(fixture):
    """The fake behind keystonemiddleware's ``auth_token``; version discovery is open."""
    from keystonemiddleware import auth_token
    app = FakeGlance(fixture)
    authed = auth_token.AuthProtocol(app, {"delay_auth_decision": False})

    def route(environ, start_response):
        if environ.get("PATH_INFO", "").rstrip("/") in ("", "/versions"):
            return app(environ, start_response)
        return authed(environ, start_response)
    return route
