"""The reads the driver makes, each a plain GET through one keystone session.

* Heat ``GET /stacks/{id}/resources?nested_depth=2``: every resource of the
  stack and of its nested stacks down to the AutoScalingGroup members'
  resources, in one call (plus the redirect Heat answers for a bare id);
* Heat ``GET /stacks/{id}/resources/{name}``: one resource with its
  attributes (a connection point's address);
* Nova ``GET /servers/detail``: every server of the project, with addresses,
  ``hostId`` and, when the VIM user may see it, ``OS-EXT-SRV-ATTR:host``;
  followed page by page (``limit``/``marker``).

So the number of calls does not grow with the number of workers (except one
page per 1000 servers). Transient failures (connection refused or reset,
timeouts, HTTP 5xx) are retried with backoff; the error then names the
service, the request and the answer, never a token or password.
"""
import time
import typing
import urllib.parse

PAGE = 1000


class OpenStackError(Exception):
    """An OpenStack call failed (after retries). ``status``: the HTTP status of a 4xx
    answer (403: the policy refuses this identity the request), else None."""

    def __init__(self, message: str, status: typing.Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class OpenStack:
    """Heat and Nova reads on SESSION (a keystoneauth1 Session)."""

    def __init__(self, session: typing.Any, region_name: typing.Optional[str] = None,
                 retries: int = 2, backoff: float = 0.5, interface: str = "public") -> None:
        self.session, self.region_name = session, region_name
        self.retries, self.backoff, self.interface = retries, backoff, interface
        self.calls = 0  # HTTP requests answered (including token and redirects)
        self._identities: typing.Dict[str, str] = {}  # bare stack id -> "name/id"
        http = getattr(session, "session", None)
        if http is not None and hasattr(http, "hooks"):
            http.hooks.setdefault("response", []).append(self._count)

    def _count(self, response, *args, **kwargs):
        self.calls += 1
        return response

    def get_json(self, service: str, name: str, path: str,
                 expect_json: bool = True) -> typing.Any:
        """The JSON answer of one GET of PATH on SERVICE (NAME in messages), retried
        on no answer and 5xx; OpenStackError for the rest."""
        return self._request("GET", service, name, path, self.retries)

    def _request(self, method: str, service: str, name: str, path: str, retries: int,
                 body: typing.Any = None, microversion: typing.Optional[str] = None
                 ) -> typing.Any:
        """The JSON answer of METHOD PATH on SERVICE (None for an empty body), tried
        1 + RETRIES times on no answer and 5xx; OpenStackError for the rest."""
        from keystoneauth1 import exceptions as ks_exc
        filt = {"service_type": service, "interface": self.interface}
        if self.region_name:
            filt["region_name"] = self.region_name
        extra = {"json": body} if body is not None else {}
        if microversion:
            extra.update(microversion=microversion, microversion_service_type=service)
        last = None
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                resp = self.session.request(path, method, endpoint_filter=filt,
                                            raise_exc=False,
                                            headers={"Accept": "application/json"}, **extra)
            except (ks_exc.ConnectFailure, ks_exc.ConnectTimeout, ks_exc.RequestTimeout,
                    ks_exc.UnknownConnectionError) as e:
                last = "no answer (%s)" % type(e).__name__
                continue
            except ks_exc.EndpointNotFound:
                raise OpenStackError("%s: the service catalog has no %s endpoint%s" % (
                    name, service, " in region %s" % self.region_name if self.region_name
                    else "")) from None
            except ks_exc.Unauthorized:
                raise OpenStackError("%s: Keystone refused the VIM credentials" % name) from None
            except ks_exc.ClientException as e:
                raise OpenStackError("%s: %s" % (name, type(e).__name__)) from None
            if resp.status_code >= 500:
                last = "HTTP %d %s" % (resp.status_code, _message(resp))
                continue
            if resp.status_code >= 400:
                raise OpenStackError("%s %s %s: HTTP %d %s" % (
                    name, method, path, resp.status_code, _message(resp)),
                    status=resp.status_code)
            if not resp.content:
                return None
            try:
                return resp.json()
            except ValueError:
                raise OpenStackError("%s %s %s: the answer is not JSON" % (
                    name, method, path)) from None
        raise OpenStackError("%s %s %s: %s (after %d attempts)" % (
            name, method, path, last, retries + 1))

    def stack_resources(self, stack_id: str,
                        nested_depth: int = 2) -> typing.List[typing.Dict[str, typing.Any]]:
        """Every resource of STACK_ID down to NESTED_DEPTH (list of dicts)."""
        path = "/stacks/%s/resources?nested_depth=%d" % (_quote(stack_id), nested_depth)
        return self.get_json("orchestration", "Heat", path).get("resources") or []

    def resource(self, stack_id: str, name: str) -> typing.Dict[str, typing.Any]:
        """One resource of STACK_ID (an id, or ``name/id``), with its attributes.

        Heat serves one resource only under the stack's ``name/id`` path: a bare id is
        redirected for the stack itself and its resource list, not for a resource (its
        router reads ``/stacks/<id>/resources/<r>`` as stack name ``<id>``, stack id
        ``resources``: 404). So a bare id is resolved first, once per stack."""
        path = "/stacks/%s/resources/%s" % (_quote(self._identity(stack_id)), _quote(name))
        return self.get_json("orchestration", "Heat", path).get("resource") or {}

    def _identity(self, stack_id):
        stack_id = str(stack_id)
        if "/" in stack_id:
            return stack_id
        known = self._identities.get(stack_id)
        if known is None:
            stack = self.get_json("orchestration", "Heat",
                              "/stacks/%s" % _quote(stack_id)).get("stack") or {}
            if not stack.get("stack_name"):
                raise OpenStackError("Heat GET /stacks/%s: no stack_name in the answer"
                                     % stack_id)
            known = self._identities[stack_id] = "%s/%s" % (stack["stack_name"],
                                                            stack.get("id") or stack_id)
        return known

    def servers(self) -> typing.List[typing.Dict[str, typing.Any]]:
        """Every server of the project (``/servers/detail``, all pages)."""
        out: typing.List[typing.Dict[str, typing.Any]] = []
        marker = None
        while True:
            query: typing.Dict[str, typing.Any] = {"limit": PAGE}
            if marker:
                query["marker"] = marker
            page = self.get_json("compute", "Nova", "/servers/detail?"
                             + urllib.parse.urlencode(query)).get("servers") or []
            out.extend(page)
            if len(page) < PAGE:
                return out
            marker = page[-1]["id"]

    def server(self, server_id: str) -> typing.Dict[str, typing.Any]:
        """One server (``GET /servers/{id}``), with its task state and host."""
        return self.get_json("compute", "Nova", "/servers/%s" % _quote(server_id)
                             ).get("server") or {}

    def compute_hosts(self) -> typing.Optional[typing.Set[str]]:
        """The compute hosts (their service's host, as servers' ``OS-EXT-SRV-ATTR:host``
        names them) that are up and enabled: ``GET /os-hypervisors/detail``, compute API
        2.53, one page of up to ``PAGE``. None when Nova does not say (its
        policy allows admins only by default: HTTP 403; or more hosts than a page)."""
        try:
            answer = self._request("GET", "compute", "Nova", "/os-hypervisors/detail?limit=%d"
                                   % PAGE, self.retries, microversion="2.53")
        except OpenStackError as e:
            if e.status in (401, 403, 404):
                return None
            raise
        if any(link.get("rel") == "next" for link in answer.get("hypervisors_links") or ()):
            return None
        return {h["service"]["host"] for h in answer.get("hypervisors") or ()
                if h.get("state") == "up" and h.get("status") == "enabled"
                and isinstance(h.get("service"), dict) and h["service"].get("host")}

    def live_migrate(self, server_id: str) -> None:
        """Ask Nova to live-migrate SERVER_ID to a host its scheduler chooses
        (``os-migrateLive``, compute API 2.25: no host, block migration when needed).
        Not retried: a second request would find the first one's task. Nova answers 202
        once the server's task is ``migrating``; the move itself follows."""
        self._request("POST", "compute", "Nova", "/servers/%s/action" % _quote(server_id), 0,
                      body={"os-migrateLive": {"host": None, "block_migration": "auto"}},
                      microversion="2.25")


def _quote(value):
    return urllib.parse.quote(str(value), safe="/")


def _message(resp):
    """The error message of an OpenStack error body (Heat, Nova or Neutron)."""
    try:
        body = resp.json()
    except ValueError:
        return (resp.reason or "").strip()
    if isinstance(body, dict):
        for v in body.values():
            if isinstance(v, dict):
                msg = v.get("message")
                if msg:
                    return "%s: %s" % (resp.reason or "", str(msg)[:300])
        if isinstance(body.get("explanation"), str):
            return "%s: %s" % (resp.reason or "", body["explanation"][:300])
    return (resp.reason or "").strip()
