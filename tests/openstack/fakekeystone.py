"""A minimal fake Keystone v3 (WSGI app) for the OpenStack test harness.

Runs inside ``fakecloud.py`` (the openstack venv), never in the pytest
process. It implements just what python-novaclient, python-heatclient,
keystoneauth1, keystonemiddleware and Heat's trust handling call:

* version discovery (``GET /``, ``GET /v3``);
* ``POST /v3/auth/tokens``: password auth (user by name + domain, or by id),
  token auth (re-scoping), scoped to a project (by id, or by name + domain),
  unscoped, or trust-scoped (``OS-TRUST:trust``);
* ``GET``/``HEAD /v3/auth/tokens`` (validation, ``X-Subject-Token``) and
  ``DELETE`` (revocation);
* ``POST /v3/OS-TRUST/trusts``, ``GET``/``DELETE /v3/OS-TRUST/trusts/<id>``;
* read-only ``GET /v3/users/<id>``, ``/v3/projects/<id>``, ``/v3/domains/<id>``;
* ``POST /_harness/services`` ``{"type": ..., "url": ...}``: add a service to
  the catalog of tokens issued from then on (``%(tenant_id)s`` in the URL is
  replaced by the token's project id). The harness registers Heat this way.

Tokens are ``keystoneauth1.fixture.V3Token`` objects; every issued token is
also handed to ``on_token(token_id, token)`` so that Nova's
``keystonemiddleware.fixture.AuthTokenFixture`` accepts it.
"""
import datetime
import json
import uuid

from keystoneauth1 import fixture as ks_fixture

DOMAIN_ID = "default"
DOMAIN_NAME = "Default"
PASSWORD = "secret"

# Project ids are fixed so that test code and logs are predictable. "demo"
# uses Nova's test PROJECT_ID, for which NeutronFixture serves networks.
PROJECTS = {
    "admin": "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0",
    "demo": "6f70656e737461636b20342065766572",
    "service": "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e",
}

# user name -> (user id, {project name: [role names]})
USERS = {
    "admin": ("ad000000000000000000000000000001", {
        "admin": ["admin", "member", "reader"],
        "demo": ["admin", "member", "reader"],
    }),
    "demo": ("de000000000000000000000000000002", {
        "demo": ["member", "reader"],
    }),
    "heat": ("4e000000000000000000000000000003", {
        "service": ["admin", "service", "member", "reader"],
    }),
    "nova": ("0a000000000000000000000000000004", {
        "service": ["admin", "service", "member", "reader"],
    }),
}
USER_BY_ID = {uid: name for name, (uid, _) in USERS.items()}
PROJECT_BY_ID = {pid: name for name, pid in PROJECTS.items()}
TOKEN_LIFETIME = datetime.timedelta(hours=12)


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class FakeKeystone:
    """WSGI app; mount it with SCRIPT_NAME ending where ``/v3`` starts."""

    def __init__(self, services=None, on_token=None, region="RegionOne"):
        # service type -> URL template
        self.services = dict(services or {})
        self.on_token = on_token
        self.region = region
        self.tokens = {}
        self.trusts = {}

    # -- helpers --------------------------------------------------------
    @staticmethod
    def _base(environ):
        host = environ.get("HTTP_HOST") or "%s:%s" % (
            environ["SERVER_NAME"], environ["SERVER_PORT"])
        return "http://%s%s" % (host, environ.get("SCRIPT_NAME", ""))

    def _version(self, environ):
        return {
            "id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": self._base(environ) + "/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}],
        }

    def _find_user(self, user):
        if user.get("id"):
            name = USER_BY_ID.get(user["id"])
        else:
            name = user.get("name")
            dom = user.get("domain") or {}
            if dom and dom.get("id", DOMAIN_ID) != DOMAIN_ID and dom.get("name") != DOMAIN_NAME:
                name = None
        if name not in USERS:
            raise HTTPError(401, "The request you have made requires authentication.")
        return name

    def _find_project(self, project):
        if project.get("id"):
            name = PROJECT_BY_ID.get(project["id"])
        else:
            name = project.get("name")
        if name not in PROJECTS:
            raise HTTPError(401, "Project not found: %s" % project)
        return name

    def _issue(self, environ, user_name, project_name=None, roles=None, trust=None,
               methods=("password",), audit_chain_id=None):
        user_id = USERS[user_name][0]
        token = ks_fixture.V3Token(
            expires=datetime.datetime.now(datetime.timezone.utc) + TOKEN_LIFETIME,
            user_id=user_id, user_name=user_name,
            user_domain_id=DOMAIN_ID, user_domain_name=DOMAIN_NAME,
            methods=list(methods), audit_chain_id=audit_chain_id)
        if project_name:
            pid = PROJECTS[project_name]
            token.set_project_scope(id=pid, name=project_name,
                                    domain_id=DOMAIN_ID, domain_name=DOMAIN_NAME)
            for role in roles:
                token.add_role(name=role, id=role)
            if trust:
                token.set_trust_scope(id=trust["id"],
                                      impersonation=trust["impersonation"],
                                      trustor_user_id=trust["trustor_user_id"],
                                      trustee_user_id=trust["trustee_user_id"])
            base = "http://%s" % (environ.get("HTTP_HOST") or "%s:%s" % (
                environ["SERVER_NAME"], environ["SERVER_PORT"]))
            for stype, url in sorted(self.services.items()):
                url = url.replace("%(tenant_id)s", pid).replace("%(project_id)s", pid)
                if url.startswith("/"):
                    url = base + url
                svc = token.add_service(stype, name=stype, id=stype)
                for iface in ("public", "internal", "admin"):
                    svc.add_endpoint(iface, url, region=self.region,
                                     id="%s-%s" % (stype, iface))
        token_id = uuid.uuid4().hex
        self.tokens[token_id] = token
        if self.on_token:
            self.on_token(token_id, token)
        return token_id, token

    # -- handlers -------------------------------------------------------
    def _auth(self, environ, body):
        auth = body.get("auth") or {}
        identity = auth.get("identity") or {}
        methods = identity.get("methods") or []
        audit_chain = None
        if "password" in methods:
            user = (identity.get("password") or {}).get("user") or {}
            user_name = self._find_user(user)
            if user.get("password") != PASSWORD:
                raise HTTPError(401, "Invalid username or password")
        elif "token" in methods:
            old = self.tokens.get((identity.get("token") or {}).get("id"))
            if old is None:
                raise HTTPError(401, "Could not find token")
            user_name = USER_BY_ID[old.user_id]
            audit_chain = old.audit_chain_id
        else:
            raise HTTPError(401, "Unsupported auth methods %s" % methods)

        scope = auth.get("scope")
        if not scope or scope == "unscoped":
            return self._issue(environ, user_name, methods=methods,
                               audit_chain_id=audit_chain)
        if "OS-TRUST:trust" in scope:
            trust = self.trusts.get(scope["OS-TRUST:trust"].get("id"))
            if trust is None:
                raise HTTPError(404, "Could not find trust")
            if USERS[user_name][0] != trust["trustee_user_id"]:
                raise HTTPError(403, "User is not a trustee")
            as_user = (USER_BY_ID[trust["trustor_user_id"]] if trust["impersonation"]
                       else user_name)
            return self._issue(environ, as_user, PROJECT_BY_ID[trust["project_id"]],
                               [r["name"] for r in trust["roles"]], trust=trust,
                               methods=methods, audit_chain_id=audit_chain)
        if "project" in scope:
            project = self._find_project(scope["project"])
            roles = USERS[user_name][1].get(project)
            if not roles:
                raise HTTPError(401, "User %s has no role on project %s"
                                % (user_name, project))
            return self._issue(environ, user_name, project, roles, methods=methods,
                               audit_chain_id=audit_chain)
        if "domain" in scope:
            # Domain scope is not modelled; hand out an unscoped token.
            return self._issue(environ, user_name, methods=methods,
                               audit_chain_id=audit_chain)
        raise HTTPError(400, "Unsupported scope %s" % scope)

    def _subject(self, environ):
        token = self.tokens.get(environ.get("HTTP_X_SUBJECT_TOKEN", ""))
        if token is None:
            raise HTTPError(404, "Could not find token")
        return token

    def _authorised(self, environ):
        if environ.get("HTTP_X_AUTH_TOKEN", "") not in self.tokens:
            raise HTTPError(401, "The request you have made requires authentication.")

    def _create_trust(self, environ, body):
        self._authorised(environ)
        t = dict(body.get("trust") or {})
        if t.get("trustor_user_id") not in USER_BY_ID or t.get("trustee_user_id") not in USER_BY_ID:
            raise HTTPError(404, "Could not find user")
        if t.get("project_id") not in PROJECT_BY_ID:
            raise HTTPError(404, "Could not find project")
        allowed = USERS[USER_BY_ID[t["trustor_user_id"]]][1].get(
            PROJECT_BY_ID[t["project_id"]], [])
        roles = []
        for r in t.get("roles") or []:
            name = r.get("name") or r.get("id")
            if name not in allowed:
                raise HTTPError(403, "Trustor does not have role %s" % name)
            roles.append({"id": name, "name": name, "domain_id": None})
        if not roles:
            roles = [{"id": n, "name": n, "domain_id": None} for n in allowed]
        trust = {
            "id": uuid.uuid4().hex,
            "trustor_user_id": t["trustor_user_id"],
            "trustee_user_id": t["trustee_user_id"],
            "project_id": t["project_id"],
            "impersonation": bool(t.get("impersonation", False)),
            "expires_at": t.get("expires_at"),
            "remaining_uses": t.get("remaining_uses"),
            "allow_redelegation": bool(t.get("allow_redelegation", False)),
            "redelegation_count": 0,
            "roles": roles,
            "roles_links": {"self": "", "next": None, "previous": None},
            "links": {"self": "%s/v3/OS-TRUST/trusts/placeholder" % self._base(environ)},
        }
        self.trusts[trust["id"]] = trust
        return trust

    def dispatch(self, environ):
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "").rstrip("/")
        body = {}
        if method in ("POST", "PUT", "PATCH"):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b""
            body = json.loads(raw or b"{}")

        if path == "" and method == "GET":
            return 300, {"versions": {"values": [self._version(environ)]}}, {}
        if path == "/v3" and method == "GET":
            return 200, {"version": self._version(environ)}, {}
        if path == "/v3/auth/tokens":
            if method == "POST":
                token_id, token = self._auth(environ, body)
                return 201, token, {"X-Subject-Token": token_id}
            if method in ("GET", "HEAD"):
                self._authorised(environ)
                token = self._subject(environ)
                return 200, token, {"X-Subject-Token": environ["HTTP_X_SUBJECT_TOKEN"]}
            if method == "DELETE":
                self._authorised(environ)
                self._subject(environ)
                return 204, None, {}
        if path == "/v3/OS-TRUST/trusts" and method == "POST":
            return 201, {"trust": self._create_trust(environ, body)}, {}
        if path.startswith("/v3/OS-TRUST/trusts/"):
            self._authorised(environ)
            tid = path.rsplit("/", 1)[1]
            if tid not in self.trusts:
                raise HTTPError(404, "Could not find trust")
            if method == "GET":
                return 200, {"trust": self.trusts[tid]}, {}
            if method == "DELETE":
                del self.trusts[tid]
                return 204, None, {}
        if path.startswith("/v3/users/") and method == "GET":
            self._authorised(environ)
            uid = path.rsplit("/", 1)[1]
            if uid not in USER_BY_ID:
                raise HTTPError(404, "Could not find user")
            return 200, {"user": {"id": uid, "name": USER_BY_ID[uid],
                                  "domain_id": DOMAIN_ID, "enabled": True}}, {}
        if path.startswith("/v3/projects/") and method == "GET":
            self._authorised(environ)
            pid = path.rsplit("/", 1)[1]
            if pid not in PROJECT_BY_ID:
                raise HTTPError(404, "Could not find project")
            return 200, {"project": {"id": pid, "name": PROJECT_BY_ID[pid],
                                     "domain_id": DOMAIN_ID, "enabled": True,
                                     "is_domain": False, "parent_id": DOMAIN_ID}}, {}
        if path.startswith("/v3/domains/") and method == "GET":
            return 200, {"domain": {"id": DOMAIN_ID, "name": DOMAIN_NAME,
                                    "enabled": True}}, {}
        if path == "/_harness/services" and method == "POST":
            self.services[body["type"]] = body["url"]
            return 200, {"services": self.services}, {}
        raise HTTPError(404, "%s %s not implemented by the fake Keystone" % (method, path))

    def __call__(self, environ, start_response):
        try:
            status, body, headers = self.dispatch(environ)
        except HTTPError as exc:
            status, headers = exc.status, {}
            body = {"error": {"code": exc.status, "message": exc.message,
                              "title": "Error"}}
        reasons = {200: "OK", 201: "Created", 204: "No Content", 300: "Multiple Choices",
                   400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
                   404: "Not Found"}
        data = b"" if body is None else json.dumps(body).encode()
        hdrs = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        hdrs += list(headers.items())
        if status == 401:
            hdrs.append(("WWW-Authenticate", 'Keystone uri="%s"' % self._base(environ)))
        start_response("%d %s" % (status, reasons.get(status, "")), hdrs)
        if environ["REQUEST_METHOD"] == "HEAD":
            return [b""]
        return [data]
