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
* ``GET /v3/regions[/<id>]`` (the one region; Tacker's VIM registration reads it);
* identity CRUD that Heat's stack users need (``OS::Heat::ScalingPolicy``
  and every other ``SignalResponder``): ``GET /v3/roles[/<id>]``,
  ``GET|POST /v3/users``, ``GET|PATCH|DELETE /v3/users/<id>``,
  ``GET /v3/users/<id>/projects``,
  ``PUT|HEAD|DELETE /v3/{projects,domains}/<id>/users/<uid>/roles/<rid>``,
  ``GET /v3/{projects,domains}/<id>/users/<uid>/roles``,
  ``GET /v3/role_assignments``, ``GET|POST /v3/projects``,
  ``GET|DELETE /v3/projects/<id>``, ``GET /v3/domains[/<id>]``,
  ``GET|POST /v3/credentials``, ``GET|DELETE /v3/credentials/<id>`` (EC2
  credentials, ids as Keystone makes them: sha256 of the access key);
* domain-scoped tokens for users with a role on the domain (Heat's
  ``stack_domain_admin`` in the ``heat`` domain);
* ``POST /_harness/services`` ``{"type": ..., "url": ...}`` (and optionally
  ``"name"``, else the type): add a service to the catalog of tokens issued from
  then on, with public, internal and admin endpoints (``%(tenant_id)s`` in the
  URL is replaced by the token's project id). The harness registers Heat this
  way, the Tacker tests Tacker and Barbican.

Writes to users, grants, projects and other users' credentials need the
``admin`` role, as with Keystone's default policy; so does listing roles,
users and projects. (With Heat's legacy stack users, i.e. no
``stack_user_domain`` in heat.conf, a ScalingPolicy therefore needs a stack
owner with ``admin``, as on a real cloud.)

Tokens are ``keystoneauth1.fixture.V3Token`` objects; every issued token is
also handed to ``on_token(token_id, token)`` so that Nova's
``keystonemiddleware.fixture.AuthTokenFixture`` accepts it.
"""
import datetime
import hashlib
import json
import uuid
from urllib.parse import parse_qsl

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
    "tacker": ("7a000000000000000000000000000006", {
        "service": ["admin", "service", "member", "reader"],
    }),
    "barbican": ("ba000000000000000000000000000007", {
        "service": ["admin", "service", "member", "reader"],
    }),
}
USER_BY_ID = {uid: name for name, (uid, _) in USERS.items()}
PROJECT_BY_ID = {pid: name for name, pid in PROJECTS.items()}

# Heat's stack-user domain, as devstack sets it up: heat.conf
# stack_user_domain_name=heat, stack_domain_admin=heat_domain_admin.
HEAT_DOMAIN_ID = "4ea7d0e1a1b5402e8f1c5b8fd1e5a0f0"
HEAT_DOMAIN_NAME = "heat"
HEAT_DOMAIN_ADMIN = ("heat_domain_admin", "4e000000000000000000000000000005")

# Role ids equal role names (tokens and trusts have always carried them so).
# heat_stack_user is Heat's default heat_stack_user_role.
ROLES = ("admin", "member", "reader", "service", "heat_stack_user")
TOKEN_LIFETIME = datetime.timedelta(hours=12)


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def _forbidden(action):
    return HTTPError(403, "You are not authorized to perform the requested action: "
                          "%s." % action)


class FakeKeystone:
    """WSGI app; mount it with SCRIPT_NAME ending where ``/v3`` starts."""

    def __init__(self, services=None, on_token=None, region="RegionOne"):
        # service type -> URL template
        self.services = dict(services or {})
        self.service_names = {}     # service type -> service name
        self.on_token = on_token
        self.region = region
        self.tokens = {}
        self.trusts = {}
        self.credentials = {}
        self.roles = {r: {"id": r, "name": r, "domain_id": None, "description": None,
                          "options": {}} for r in ROLES}
        self.domains = {
            DOMAIN_ID: {"id": DOMAIN_ID, "name": DOMAIN_NAME, "enabled": True,
                        "description": "The default domain", "tags": [], "options": {}},
            HEAT_DOMAIN_ID: {"id": HEAT_DOMAIN_ID, "name": HEAT_DOMAIN_NAME, "enabled": True,
                             "description": "Owns users and projects created by heat",
                             "tags": [], "options": {}},
        }
        self.projects = {pid: self._project_entity(pid, name, DOMAIN_ID)
                         for name, pid in PROJECTS.items()}
        self.users = {}
        # (user id, "projects" | "domains", target id) -> [role ids]
        self.grants = {}
        for name, (uid, roles) in USERS.items():
            self.users[uid] = self._user_entity(uid, name, DOMAIN_ID, PASSWORD,
                                                PROJECTS[next(iter(roles))])
            for project, role_names in roles.items():
                self.grants[(uid, "projects", PROJECTS[project])] = list(role_names)
        name, uid = HEAT_DOMAIN_ADMIN
        self.users[uid] = self._user_entity(uid, name, DOMAIN_ID, PASSWORD, None)
        self.grants[(uid, "domains", HEAT_DOMAIN_ID)] = ["admin"]

    # -- entities ---------------------------------------------------------
    @staticmethod
    def _project_entity(pid, name, domain_id, description=""):
        return {"id": pid, "name": name, "domain_id": domain_id, "enabled": True,
                "is_domain": False, "parent_id": domain_id, "description": description,
                "tags": [], "options": {}}

    @staticmethod
    def _user_entity(uid, name, domain_id, password, default_project_id):
        user = {"id": uid, "name": name, "domain_id": domain_id, "enabled": True,
                "password_expires_at": None, "options": {}, "password": password}
        if default_project_id:
            user["default_project_id"] = default_project_id
        return user

    def _out(self, environ, collection, entity):
        out = {k: v for k, v in entity.items() if k != "password"}
        out["links"] = {"self": "%s/v3/%s/%s" % (self._base(environ), collection, entity["id"])}
        return out

    def _list_out(self, environ, collection, entities):
        return {collection.rsplit("/", 1)[-1]: [self._out(environ, collection, e)
                                                for e in entities],
                "links": {"self": "%s/v3/%s" % (self._base(environ), collection),
                          "previous": None, "next": None}}

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

    def _find_domain(self, domain):
        if domain.get("id"):
            return self.domains.get(domain["id"])
        return next((d for d in self.domains.values() if d["name"] == domain.get("name")),
                    None)

    def _find_user(self, user):
        """The user entity for an auth request's ``user`` dict, or 401."""
        if user.get("id"):
            found = self.users.get(user["id"])
        else:
            domain = self._find_domain(user.get("domain") or {"id": DOMAIN_ID})
            found = next((u for u in self.users.values()
                          if domain and u["name"] == user.get("name")
                          and u["domain_id"] == domain["id"]), None)
        if found is None or not found["enabled"]:
            raise HTTPError(401, "The request you have made requires authentication.")
        return found

    def _find_project(self, project):
        if project.get("id"):
            found = self.projects.get(project["id"])
        else:
            domain = self._find_domain(project.get("domain") or {"id": DOMAIN_ID})
            found = next((p for p in self.projects.values()
                          if domain and p["name"] == project.get("name")
                          and p["domain_id"] == domain["id"]), None)
        if found is None:
            raise HTTPError(401, "Project not found: %s" % project)
        return found

    def _issue(self, environ, user_id, project_id=None, domain_id=None, roles=(),
               trust=None, methods=("password",), audit_chain_id=None):
        user = self.users[user_id]
        user_domain = self.domains[user["domain_id"]]
        token = ks_fixture.V3Token(
            expires=datetime.datetime.now(datetime.timezone.utc) + TOKEN_LIFETIME,
            user_id=user_id, user_name=user["name"],
            user_domain_id=user_domain["id"], user_domain_name=user_domain["name"],
            methods=list(methods), audit_chain_id=audit_chain_id)
        if project_id or domain_id:
            if project_id:
                project = self.projects[project_id]
                token.set_project_scope(id=project_id, name=project["name"],
                                        domain_id=project["domain_id"],
                                        domain_name=self.domains[project["domain_id"]]["name"])
            else:
                token.set_domain_scope(id=domain_id, name=self.domains[domain_id]["name"])
            for role in roles:
                token.add_role(name=self.roles[role]["name"], id=role)
            if trust:
                token.set_trust_scope(id=trust["id"],
                                      impersonation=trust["impersonation"],
                                      trustor_user_id=trust["trustor_user_id"],
                                      trustee_user_id=trust["trustee_user_id"])
            base = "http://%s" % (environ.get("HTTP_HOST") or "%s:%s" % (
                environ["SERVER_NAME"], environ["SERVER_PORT"]))
            for stype, url in sorted(self.services.items()):
                if project_id:
                    url = url.replace("%(tenant_id)s", project_id).replace(
                        "%(project_id)s", project_id)
                elif "%(" in url:
                    continue
                if url.startswith("/"):
                    url = base + url
                svc = token.add_service(stype, name=self.service_names.get(stype, stype),
                                        id=stype)
                for iface in ("public", "internal", "admin"):
                    svc.add_endpoint(iface, url, region=self.region,
                                     id="%s-%s" % (stype, iface))
        token_id = uuid.uuid4().hex
        self.tokens[token_id] = token
        if self.on_token:
            self.on_token(token_id, token)
        return token_id, token

    def issue_token(self, host, user="nova", project="service"):
        """Id of a new project-scoped token for a harness user, issued
        in-process (e.g. for Neutron's nova notifier, which acts as the
        ``nova`` service user). ``host``: ``127.0.0.1:<port>`` for the
        catalog URLs."""
        uid, pid = USERS[user][0], PROJECTS[project]
        token_id, _ = self._issue({"HTTP_HOST": host}, uid, pid,
                                  roles=self.grants[(uid, "projects", pid)])
        return token_id

    # -- handlers -------------------------------------------------------
    def _auth(self, environ, body):
        auth = body.get("auth") or {}
        identity = auth.get("identity") or {}
        methods = identity.get("methods") or []
        audit_chain = None
        if "password" in methods:
            req_user = (identity.get("password") or {}).get("user") or {}
            user = self._find_user(req_user)
            if req_user.get("password") != user["password"]:
                raise HTTPError(401, "Invalid username or password")
            user_id = user["id"]
        elif "token" in methods:
            old = self.tokens.get((identity.get("token") or {}).get("id"))
            if old is None:
                raise HTTPError(401, "Could not find token")
            user_id = old.user_id
            audit_chain = old.audit_chain_id
        else:
            raise HTTPError(401, "Unsupported auth methods %s" % methods)

        scope = auth.get("scope")
        if not scope or scope == "unscoped":
            return self._issue(environ, user_id, methods=methods,
                               audit_chain_id=audit_chain)
        if "OS-TRUST:trust" in scope:
            trust = self.trusts.get(scope["OS-TRUST:trust"].get("id"))
            if trust is None:
                raise HTTPError(404, "Could not find trust")
            if user_id != trust["trustee_user_id"]:
                raise HTTPError(403, "User is not a trustee")
            as_user = trust["trustor_user_id"] if trust["impersonation"] else user_id
            return self._issue(environ, as_user, trust["project_id"],
                               roles=[r["id"] for r in trust["roles"]], trust=trust,
                               methods=methods, audit_chain_id=audit_chain)
        if "project" in scope:
            project = self._find_project(scope["project"])
            roles = self.grants.get((user_id, "projects", project["id"]))
            if not roles:
                raise HTTPError(401, "User %s has no role on project %s"
                                % (self.users[user_id]["name"], project["name"]))
            return self._issue(environ, user_id, project["id"], roles=roles,
                               methods=methods, audit_chain_id=audit_chain)
        if "domain" in scope:
            domain = self._find_domain(scope["domain"])
            roles = domain and self.grants.get((user_id, "domains", domain["id"]))
            if not roles:
                raise HTTPError(401, "User %s has no access to domain %s"
                                % (self.users[user_id]["name"], scope["domain"]))
            return self._issue(environ, user_id, domain_id=domain["id"], roles=roles,
                               methods=methods, audit_chain_id=audit_chain)
        raise HTTPError(400, "Unsupported scope %s" % scope)

    def _subject(self, environ):
        token = self.tokens.get(environ.get("HTTP_X_SUBJECT_TOKEN", ""))
        if token is None:
            raise HTTPError(404, "Could not find token")
        return token

    def _authorised(self, environ):
        token = self.tokens.get(environ.get("HTTP_X_AUTH_TOKEN", ""))
        if token is None:
            raise HTTPError(401, "The request you have made requires authentication.")
        return token

    def _admin(self, environ, action):
        """The caller's token if it has the admin role, else 403."""
        token = self._authorised(environ)
        if "admin" not in {r["name"] for r in token["token"].get("roles", [])}:
            raise _forbidden(action)
        return token

    def _create_trust(self, environ, body):
        self._authorised(environ)
        t = dict(body.get("trust") or {})
        if t.get("trustor_user_id") not in self.users or \
                t.get("trustee_user_id") not in self.users:
            raise HTTPError(404, "Could not find user")
        if t.get("project_id") not in self.projects:
            raise HTTPError(404, "Could not find project")
        allowed = self.grants.get((t["trustor_user_id"], "projects", t["project_id"]), [])
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

    # -- identity CRUD (what Heat's stack users need) ---------------------
    @staticmethod
    def _filtered(entities, query, keys):
        out = list(entities)
        for key in keys:
            if key in query:
                want = query[key]
                out = [e for e in out if (str(e.get(key)).lower() == want.lower()
                                          if isinstance(e.get(key), bool)
                                          else e.get(key) == want)]
        return out

    def _create_user(self, environ, body):
        self._admin(environ, "identity:create_user")
        req = body.get("user") or {}
        if not req.get("name"):
            raise HTTPError(400, "Invalid input for field 'name'")
        domain_id = req.get("domain_id") or DOMAIN_ID
        if domain_id not in self.domains:
            raise HTTPError(404, "Could not find domain: %s." % domain_id)
        if any(u["name"] == req["name"] and u["domain_id"] == domain_id
               for u in self.users.values()):
            raise HTTPError(409, "Conflict occurred attempting to store user - "
                                 "Duplicate entry found with name %s at domain ID %s."
                            % (req["name"], domain_id))
        user = self._user_entity(uuid.uuid4().hex, req["name"], domain_id,
                                 req.get("password"), req.get("default_project_id"))
        user["enabled"] = bool(req.get("enabled", True))
        user["options"] = dict(req.get("options") or {})
        for key in ("description", "email"):
            if key in req:
                user[key] = req[key]
        self.users[user["id"]] = user
        return user

    def _user_or_404(self, uid):
        if uid not in self.users:
            raise HTTPError(404, "Could not find user: %s." % uid)
        return self.users[uid]

    def _role_or_404(self, rid):
        role = self.roles.get(rid) or next(
            (r for r in self.roles.values() if r["name"] == rid), None)
        if role is None:
            raise HTTPError(404, "Could not find role: %s." % rid)
        return role

    def _target_or_404(self, kind, tid):
        store = self.projects if kind == "projects" else self.domains
        if tid not in store:
            raise HTTPError(404, "Could not find %s: %s." % (kind[:-1], tid))

    def _grant(self, environ, method, kind, tid, uid, rid):
        if method == "GET" and rid is None:
            self._admin(environ, "identity:list_grants")
        else:
            self._admin(environ, "identity:%s_grant" % {
                "PUT": "create", "HEAD": "check", "GET": "check",
                "DELETE": "revoke"}[method])
        self._target_or_404(kind, tid)
        self._user_or_404(uid)
        roles = self.grants.setdefault((uid, kind, tid), [])
        if rid is None:
            return 200, {"roles": [self._out(environ, "roles", self.roles[r]) for r in roles],
                         "links": {"self": None, "previous": None, "next": None}}, {}
        role = self._role_or_404(rid)
        if method == "PUT":
            if role["id"] not in roles:
                roles.append(role["id"])
            return 204, None, {}
        if role["id"] not in roles:
            raise HTTPError(404, "Could not find role assignment with role: %s, user or "
                                 "group: %s, project, domain, or system: %s."
                            % (rid, uid, tid))
        if method == "DELETE":
            roles.remove(role["id"])
        return 204, None, {}

    def _role_assignments(self, environ, query):
        self._admin(environ, "identity:list_role_assignments")
        out = []
        for (uid, kind, tid), roles in sorted(self.grants.items()):
            scope_key = "project" if kind == "projects" else "domain"
            if query.get("user.id", uid) != uid:
                continue
            if query.get("scope.%s.id" % scope_key, tid) != tid or (
                    "scope.project.id" in query and kind != "projects") or (
                    "scope.domain.id" in query and kind != "domains"):
                continue
            for role in roles:
                if query.get("role.id", role) != role:
                    continue
                out.append({"role": {"id": role}, "user": {"id": uid},
                            "scope": {scope_key: {"id": tid}},
                            "links": {"assignment": "%s/v3/%s/%s/users/%s/roles/%s" % (
                                self._base(environ), kind, tid, uid, role)}})
        return {"role_assignments": out,
                "links": {"self": None, "previous": None, "next": None}}

    def _create_project(self, environ, body):
        self._admin(environ, "identity:create_project")
        req = body.get("project") or {}
        domain_id = req.get("domain_id") or DOMAIN_ID
        if domain_id not in self.domains:
            raise HTTPError(404, "Could not find domain: %s." % domain_id)
        if any(p["name"] == req.get("name") and p["domain_id"] == domain_id
               for p in self.projects.values()):
            raise HTTPError(409, "Conflict occurred attempting to store project - it is "
                                 "not permitted to have two projects with the same name "
                                 "in the same domain : %s." % req.get("name"))
        project = self._project_entity(uuid.uuid4().hex, req.get("name"), domain_id,
                                       req.get("description", ""))
        project["enabled"] = bool(req.get("enabled", True))
        self.projects[project["id"]] = project
        return project

    def _create_credential(self, environ, body):
        token = self._authorised(environ)
        req = body.get("credential") or {}
        if req.get("user_id") != token.user_id:
            self._admin(environ, "identity:create_credential")
        self._user_or_404(req.get("user_id"))
        if req.get("type") == "ec2":
            try:
                blob = json.loads(req.get("blob") or "")
                access = blob["access"]
            except (ValueError, KeyError, TypeError):
                raise HTTPError(400, "Invalid blob in credential")
            if not req.get("project_id"):
                raise HTTPError(400, "Invalid input for field 'project_id': a project "
                                     "is required for ec2 credentials")
            cred_id = hashlib.sha256(access.encode()).hexdigest()
        else:
            cred_id = uuid.uuid4().hex
        if cred_id in self.credentials:
            raise HTTPError(409, "Conflict occurred attempting to store credential - "
                                 "Duplicate ID, %s." % cred_id)
        cred = {"id": cred_id, "user_id": req["user_id"], "type": req.get("type"),
                "blob": req.get("blob"), "project_id": req.get("project_id")}
        self.credentials[cred_id] = cred
        return cred

    def _credential(self, environ, cid, method):
        token = self._authorised(environ)
        cred = self.credentials.get(cid)
        if cred is None:
            raise HTTPError(404, "Could not find credential: %s." % cid)
        if cred["user_id"] != token.user_id:
            self._admin(environ, "identity:%s_credential" % (
                "get" if method == "GET" else "delete"))
        if method == "DELETE":
            del self.credentials[cid]
            return 204, None, {}
        return 200, {"credential": self._out(environ, "credentials", cred)}, {}

    def _identity(self, environ, method, path, query, body):
        """Users, roles, grants, projects, domains and credentials."""
        parts = path.split("/")[2:]   # after "/v3"
        coll = parts[0]
        if coll in ("projects", "domains") and len(parts) in (5, 6) \
                and parts[2] == "users" and parts[4] == "roles":
            rid = parts[5] if len(parts) == 6 else None
            return self._grant(environ, method, coll, parts[1], parts[3], rid)
        serve = {"regions": self._serve_regions, "roles": self._serve_roles,
                 "role_assignments": self._serve_role_assignments,
                 "users": self._serve_users, "projects": self._serve_projects,
                 "domains": self._serve_domains,
                 "credentials": self._serve_credentials}.get(coll)
        answer = serve(environ, method, parts, query, body) if serve else None
        if answer is None:
            raise HTTPError(404, "%s %s not implemented by the fake Keystone" % (method, path))
        return answer

    # Each _serve_<collection>(environ, method, parts, query, body) answers a request for
    # /v3/<collection>[/...] (PARTS: the path after /v3, split at "/"): (status, body,
    # headers), or None for a request the fake does not implement.

    def _serve_regions(self, environ, method, parts, query, body):
        """GET /v3/regions[/<id>] (Tacker's VIM registration lists them)."""
        if method != "GET":
            return None
        self._authorised(environ)
        region = {"id": self.region, "description": "", "parent_region_id": None}
        if len(parts) == 1:
            return 200, self._list_out(environ, "regions", [region]), {}
        if parts[1] != self.region:
            raise HTTPError(404, "Could not find region: %s." % parts[1])
        return 200, {"region": self._out(environ, "regions", region)}, {}

    def _serve_roles(self, environ, method, parts, query, body):
        """GET /v3/roles[/<id>]."""
        if method != "GET":
            return None
        self._admin(environ, "identity:list_roles")
        if len(parts) == 1:
            return 200, self._list_out(environ, "roles", self._filtered(
                self.roles.values(), query, ("name", "domain_id"))), {}
        return 200, {"role": self._out(environ, "roles", self._role_or_404(parts[1]))}, {}

    def _serve_role_assignments(self, environ, method, parts, query, body):
        """GET /v3/role_assignments."""
        if method != "GET":
            return None
        return 200, self._role_assignments(environ, query), {}

    def _serve_users(self, environ, method, parts, query, body):
        """GET|POST /v3/users, GET /v3/users/<id>/projects, and one user (_serve_user)."""
        if len(parts) == 1:
            if method == "POST":
                return 201, {"user": self._out(environ, "users",
                                               self._create_user(environ, body))}, {}
            if method == "GET":
                self._admin(environ, "identity:list_users")
                return 200, self._list_out(environ, "users", self._filtered(
                    self.users.values(), query, ("name", "domain_id", "enabled"))), {}
        uid = parts[1]
        if len(parts) == 3 and parts[2] == "projects" and method == "GET":
            self._authorised(environ)
            self._user_or_404(uid)
            pids = {t for (u, k, t) in self.grants if u == uid and k == "projects"
                    and self.grants[(u, k, t)]}
            return 200, self._list_out(environ, "projects",
                                       [self.projects[p] for p in sorted(pids)]), {}
        if len(parts) == 2:
            return self._serve_user(environ, method, uid, body)
        return None

    def _serve_user(self, environ, method, uid, body):
        """GET|PATCH|DELETE /v3/users/<uid> (deleting its grants and credentials too)."""
        if method == "GET":
            self._authorised(environ)
            return 200, {"user": self._out(environ, "users", self._user_or_404(uid))}, {}
        if method == "PATCH":
            self._admin(environ, "identity:update_user")
            user = self._user_or_404(uid)
            for key, value in (body.get("user") or {}).items():
                if key != "id":
                    user[key] = value
            return 200, {"user": self._out(environ, "users", user)}, {}
        if method == "DELETE":
            self._admin(environ, "identity:delete_user")
            self._user_or_404(uid)
            del self.users[uid]
            for key in [k for k in self.grants if k[0] == uid]:
                del self.grants[key]
            for cid in [c for c, v in self.credentials.items() if v["user_id"] == uid]:
                del self.credentials[cid]
            return 204, None, {}
        return None

    def _serve_projects(self, environ, method, parts, query, body):
        """GET|POST /v3/projects, GET|DELETE /v3/projects/<id> (not a harness project)."""
        if len(parts) == 1:
            if method == "POST":
                return 201, {"project": self._out(environ, "projects",
                                                  self._create_project(environ, body))}, {}
            if method == "GET":
                self._admin(environ, "identity:list_projects")
                return 200, self._list_out(environ, "projects", self._filtered(
                    self.projects.values(), query, ("name", "domain_id"))), {}
        if len(parts) == 2:
            self._authorised(environ)
            pid = parts[1]
            if pid not in self.projects:
                raise HTTPError(404, "Could not find project: %s." % pid)
            if method == "GET":
                return 200, {"project": self._out(environ, "projects",
                                                  self.projects[pid])}, {}
            if method == "DELETE":
                self._admin(environ, "identity:delete_project")
                if pid in PROJECT_BY_ID:
                    raise _forbidden("identity:delete_project (harness project)")
                del self.projects[pid]
                for key in [k for k in self.grants if k[1:] == ("projects", pid)]:
                    del self.grants[key]
                return 204, None, {}
        return None

    def _serve_domains(self, environ, method, parts, query, body):
        """GET /v3/domains[/<id>]."""
        if method != "GET":
            return None
        if len(parts) == 1:
            self._authorised(environ)
            return 200, self._list_out(environ, "domains", self._filtered(
                self.domains.values(), query, ("name", "enabled"))), {}
        if len(parts) == 2:
            domain = self.domains.get(parts[1])
            if domain is None:
                raise HTTPError(404, "Could not find domain: %s." % parts[1])
            return 200, {"domain": self._out(environ, "domains", domain)}, {}
        return None

    def _serve_credentials(self, environ, method, parts, query, body):
        """GET|POST /v3/credentials (others' only for an admin), GET|DELETE
        /v3/credentials/<id>."""
        if len(parts) == 1:
            if method == "POST":
                return 201, {"credential": self._out(
                    environ, "credentials", self._create_credential(environ, body))}, {}
            if method == "GET":
                token = self._authorised(environ)
                creds = self._filtered(self.credentials.values(), query,
                                       ("user_id", "type"))
                is_admin = "admin" in {r["name"] for r in token["token"].get("roles", [])}
                if not is_admin:
                    creds = [c for c in creds if c["user_id"] == token.user_id]
                return 200, self._list_out(environ, "credentials", creds), {}
        if len(parts) == 2 and method in ("GET", "DELETE"):
            return self._credential(environ, parts[1], method)
        return None

    def add_service(self, body):
        """The catalog's entry for BODY's ``type`` is now BODY's ``url`` (named BODY's
        ``name``, else the type); every service's URL."""
        self.services[body["type"]] = body["url"]
        self.service_names[body["type"]] = body.get("name") or body["type"]
        return self.services

    def dispatch(self, environ):
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "").rstrip("/")
        query = dict(parse_qsl(environ.get("QUERY_STRING", "")))
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
        if path == "/_harness/services" and method == "POST":
            return 200, {"services": self.add_service(body)}, {}
        if path.startswith("/v3/"):
            return self._identity(environ, method, path, query, body)
        raise HTTPError(404, "%s %s not implemented by the fake Keystone" % (method, path))

    def __call__(self, environ, start_response):
        try:
            status, body, headers = self.dispatch(environ)
        except HTTPError as exc:
            status, headers = exc.status, {}
            body = {"error": {"code": exc.status, "message": exc.message,
                              "title": {400: "Bad Request", 401: "Unauthorized",
                                        403: "Forbidden", 404: "Not Found",
                                        409: "Conflict"}.get(exc.status, "Error")}}
        reasons = {200: "OK", 201: "Created", 204: "No Content", 300: "Multiple Choices",
                   400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
                   404: "Not Found", 409: "Conflict"}
        data = b"" if body is None else json.dumps(body).encode()
        hdrs = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        hdrs += list(headers.items())
        if status == 401:
            hdrs.append(("WWW-Authenticate", 'Keystone uri="%s"' % self._base(environ)))
        start_response("%d %s" % (status, reasons.get(status, "")), hdrs)
        if environ["REQUEST_METHOD"] == "HEAD":
            return [b""]
        return [data]
