"""A fake Neutron v2.0 API whose state is Nova's own ``NeutronFixture``.

Runs inside ``fakecloud.py`` (the openstack venv, eventlet), never in the
pytest process. Nova's functional fixture ``NeutronFixture`` stubs Nova's
neutron client in-process; :class:`HarnessNeutronFixture` is that fixture
with a few behaviours made closer to real Neutron, and :class:`FakeNeutron`
serves the very same instance over HTTP. A port that Heat creates over HTTP
is therefore the port that Nova binds when a server boots with
``networks: [{port: <id>}]``, and the ports Nova creates for
``networks: [{network: <name>}]`` are visible over HTTP.

Served (``/networking`` in the catalog, service type ``network``):

* ``GET /`` (versions), ``GET /v2.0`` (collections),
  ``GET /v2.0/extensions[/<alias>]``;
* ``GET /v2.0/networks[/<id>]``, ``GET /v2.0/subnets[/<id>]``;
* ``GET|POST /v2.0/ports``, ``GET|PUT|DELETE /v2.0/ports/<id>``;
* ``GET /v2.0/security-groups[/<id>]``, ``GET /v2.0/security-group-rules``;
* ``GET|POST /v2.0/floatingips``, ``GET|PUT|DELETE /v2.0/floatingips/<id>``;
  ``GET /v2.0/routers`` (always empty);
* ``GET /_harness/requests``: the requests served so far (method, path,
  query, status), for tests that check what a client called.

Wire format as Neutron's: ``{"port": {...}}`` / ``{"ports": [...]}``
envelopes, filters on any attribute (repeat a key for OR), ``fields=``,
``fixed_ips=ip_address=...`` / ``subnet_id=...``, 201 on create, 204 on
delete, errors as ``{"NeutronError": {"type", "message", "detail"}}`` with
the messages of ``neutron_lib.exceptions``. Tokens are checked by the real
keystonemiddleware ``auth_token`` (fed by the harness's fake Keystone). A
caller with the ``admin`` role sees everything; others see their project's
resources, shared and external networks, and ports on networks they own
(Neutron's default policy); ``binding:*`` and ``provider:*`` are admin only.

Like Neutron's nova notifier, a change to a port bound to a server (floating
IP (dis)association, new fixed IPs, deletion) is sent to Nova as a
``network-changed`` / ``network-vif-deleted`` server external event
(``notify_nova``), so that Nova's ``addresses`` follow.

Fixed IPs are allocated deterministically: the lowest free address of the
network's first IPv4 subnet (or of the subnet asked for), skipping the
gateway. MAC addresses are ``fa:16:3e:`` plus a counter.
"""
import collections
import copy
import datetime
import ipaddress
import itertools
import json
import logging
import threading
import uuid
from urllib.parse import parse_qsl

from neutron_lib.api.definitions import allowedaddresspairs
from neutron_lib.api.definitions import external_net
from neutron_lib.api.definitions import extra_dhcp_opt
from neutron_lib.api.definitions import l3
from neutron_lib.api.definitions import network_mtu
from neutron_lib.api.definitions import port_security
from neutron_lib.api.definitions import portbindings
from neutron_lib.api.definitions import project_id as project_id_def
from neutron_lib.api.definitions import provider_net
from neutron_lib import exceptions as n_exc
from neutron_lib.exceptions import l3 as l3_exc

from nova.tests.fixtures import neutron as nova_neutron

LOG = logging.getLogger("fakeneutron")

# Extensions whose resources and attributes this fake serves (definitions
# from neutron-lib, so names, descriptions and timestamps are Neutron's).
EXTENSIONS = (allowedaddresspairs, external_net, extra_dhcp_opt, l3, network_mtu,
              port_security, portbindings, project_id_def, provider_net)
# Not in neutron-lib's definitions (neutron's own extensions/securitygroup.py).
SECURITY_GROUP_EXT = {"alias": "security-group", "name": "security-group",
                      "description": "The security groups extension.",
                      "updated": "2012-10-05T10:00:00-00:00", "links": []}

ADMIN_ONLY_PREFIXES = ("binding:", "provider:")
PAGINATION = ("limit", "marker", "page_reverse", "sort_key", "sort_dir")

# The external network for floating IPs, owned by the admin project as in
# devstack. Same shape as NeutronFixture.network_1.
PUBLIC_NETWORK_ID = "7e2e1a4c-4a4f-4a53-b5f4-3c1b2d7f0a01"
PUBLIC_SUBNET_ID = "7e2e1a4c-4a4f-4a53-b5f4-3c1b2d7f0a02"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class SecurityGroupNotFound(n_exc.NotFound):
    # neutron/extensions/securitygroup.py (not in neutron-lib)
    message = "Security group %(id)s does not exist"


class PolicyNotAuthorized(n_exc.NotAuthorized):
    # neutron_lib.exceptions has no policy exception; oslo.policy's wording
    message = "Rule:%(action)s is disallowed by policy"


class HTTPNotFound(n_exc.NotFound):
    message = "The resource could not be found."


class HTTPBadRequest(n_exc.BadRequest):
    message = "%(msg)s"

    def __init__(self, msg):
        super().__init__(resource="", msg=msg)


def _status(exc):
    if isinstance(exc, n_exc.NotFound):
        return 404
    if isinstance(exc, (n_exc.Conflict, n_exc.InUse)):
        return 409
    if isinstance(exc, n_exc.NotAuthorized):
        return 403
    return 400


class HarnessNeutronFixture(nova_neutron.NeutronFixture):
    """Nova's NeutronFixture, closer to real Neutron where the harness needs it.

    * ``create_port`` (Nova's own calls and HTTP) honours the request
      (network, fixed IPs, name, project, security groups) and allocates
      addresses and MACs deterministically, instead of copying ``port_2``;
    * a new port is ``DOWN`` and ``binding:vif_type`` ``unbound`` until Nova
      binds it to a host (then ``ACTIVE``/``ovs``), and again after unbind;
    * every project gets its own ``default`` security group on first use,
      as Neutron does;
    * ``list_subnets`` filters (the fixture returns every subnet);
    * an external network ``public`` (172.24.4.0/24, admin project) and
      floating IPs, which ``list_floatingips`` reports to Nova too.
    """

    public_network = dict(
        copy.deepcopy(nova_neutron.NeutronFixture.network_1),
        id=PUBLIC_NETWORK_ID, name="public", mtu=1500,
        subnets=[PUBLIC_SUBNET_ID], **{"router:external": True,
                                       "provider:network_type": "flat",
                                       "provider:physical_network": "public",
                                       "provider:segmentation_id": None})
    public_subnet = dict(
        copy.deepcopy(nova_neutron.NeutronFixture.subnet_1),
        id=PUBLIC_SUBNET_ID, name="public-subnet", network_id=PUBLIC_NETWORK_ID,
        gateway_ip="172.24.4.1", cidr="172.24.4.0/24", enable_dhcp=False,
        allocation_pools=[{"start": "172.24.4.2", "end": "172.24.4.254"}])

    def __init__(self, test, admin_project_id):
        super().__init__(test)
        self.lock = threading.RLock()
        self._macs = itertools.count(1)
        self._floatingips = {}
        self.public_network = copy.deepcopy(self.public_network)
        self.public_network["tenant_id"] = self.public_network["project_id"] = admin_project_id
        self.public_subnet = copy.deepcopy(self.public_subnet)
        self.public_subnet["tenant_id"] = self.public_subnet["project_id"] = admin_project_id
        self._networks[PUBLIC_NETWORK_ID] = self.public_network
        self._subnets[PUBLIC_SUBNET_ID] = self.public_subnet
        # Timestamp for the standard attributes that the fixture's captured
        # dicts lack; added to the HTTP views only, Nova sees those dicts as
        # they are.
        self.created_at = _now()

    # -- helpers shared by Nova's calls and HTTP --------------------------
    def default_security_group(self, project_id):
        """The project's ``default`` group, created on first use (Neutron)."""
        with self.lock:
            for sg in self._security_groups.values():
                if sg["name"] == "default" and sg["project_id"] == project_id:
                    return sg
            if project_id == self.security_group["project_id"]:
                return self.security_group
            sg_id = str(uuid.uuid5(uuid.NAMESPACE_OID, "default-sg-" + project_id))
            rules = []
            for direction, ethertype in (("ingress", "IPv4"), ("egress", "IPv4"),
                                         ("ingress", "IPv6"), ("egress", "IPv6")):
                rules.append({
                    "id": str(uuid.uuid5(uuid.NAMESPACE_OID, sg_id + direction + ethertype)),
                    "description": None, "direction": direction, "ethertype": ethertype,
                    "protocol": None, "port_range_min": None, "port_range_max": None,
                    "remote_group_id": sg_id if direction == "ingress" else None,
                    "remote_ip_prefix": None, "security_group_id": sg_id,
                    "tenant_id": project_id, "project_id": project_id})
            sg = {"id": sg_id, "name": "default", "description": "Default security group",
                  "tenant_id": project_id, "project_id": project_id,
                  "security_group_rules": [r["id"] for r in rules]}
            self._security_groups[sg_id] = sg
            self.sg_rules.update({r["id"]: r for r in rules})
            return sg

    @property
    def sg_rules(self):
        if not hasattr(self, "_sg_rules"):
            self._sg_rules = {r["id"]: r for r in (
                self.security_group_rule_ip4_ingress, self.security_group_rule_ip4_egress,
                self.security_group_rule_ip6_ingress, self.security_group_rule_ip6_egress)}
        return self._sg_rules

    def _used_ips(self, subnet_id):
        used = set()
        for port in self._ports.values():
            for fip in port.get("fixed_ips") or []:
                if fip.get("subnet_id") == subnet_id:
                    used.add(fip["ip_address"])
        for fip in self._floatingips.values():
            if fip["floating_network_id"] == self._subnets[subnet_id]["network_id"]:
                used.add(fip["floating_ip_address"])
        return used

    def _allocate(self, network, subnet_id=None, ip_address=None, taken=()):
        """One fixed IP {subnet_id, ip_address} on ``network``; ``taken``:
        addresses already given to the port being created."""
        subnets = [self._subnets[s] for s in network["subnets"] if s in self._subnets]
        if ip_address is not None:
            try:
                ip = ipaddress.ip_address(ip_address)
            except ValueError:
                raise n_exc.InvalidInput(error_message="%s is not a valid IP address"
                                         % ip_address)
            candidates = [s for s in subnets if subnet_id in (None, s["id"])]
            for subnet in candidates:
                if ip in ipaddress.ip_network(subnet["cidr"], strict=False):
                    if ip_address in self._used_ips(subnet["id"]) | set(taken):
                        raise n_exc.IpAddressInUse(net_id=network["id"],
                                                   ip_address=ip_address)
                    return {"subnet_id": subnet["id"], "ip_address": ip_address}
            if subnet_id:
                raise n_exc.InvalidIpForSubnet(ip_address=ip_address)
            raise n_exc.InvalidIpForNetwork(ip_address=ip_address)
        if subnet_id is not None:
            if subnet_id not in self._subnets or subnet_id not in network["subnets"]:
                raise n_exc.SubnetNotFound(subnet_id=subnet_id)
            subnet = self._subnets[subnet_id]
        else:
            v4 = [s for s in subnets if s["ip_version"] == 4]
            if not v4:
                return None
            subnet = v4[0]
        if subnet["ip_version"] != 4:
            raise n_exc.InvalidInput(error_message="the harness allocates IPv4 only")
        used = self._used_ips(subnet["id"]) | {subnet.get("gateway_ip")} | set(taken)
        net = ipaddress.ip_network(subnet["cidr"], strict=False)
        for pool in subnet["allocation_pools"]:
            start, end = ipaddress.ip_address(pool["start"]), ipaddress.ip_address(pool["end"])
            candidate = max(start, net.network_address + 1)
            while candidate <= end and candidate < net.broadcast_address:
                if str(candidate) not in used:
                    return {"subnet_id": subnet["id"], "ip_address": str(candidate)}
                candidate += 1
        raise n_exc.IpAddressGenerationFailure(net_id=network["id"])

    def _mac(self):
        used = {p["mac_address"] for p in self._ports.values()}
        while True:
            n = next(self._macs)
            mac = "fa:16:3e:%02x:%02x:%02x" % ((n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
            if mac not in used:
                return mac

    def new_port(self, req, project_id):
        """Create a port from a request body's ``port`` dict (Neutron rules)."""
        with self.lock:
            network = self._networks.get(req.get("network_id"))
            if network is None:
                raise n_exc.NetworkNotFound(net_id=req.get("network_id"))
            project_id = req.get("project_id") or req.get("tenant_id") or project_id
            if req.get("fixed_ips") is not None:
                fixed_ips = []
                for f in req["fixed_ips"]:
                    fixed_ips.append(self._allocate(
                        network, f.get("subnet_id"), f.get("ip_address"),
                        taken=[x["ip_address"] for x in fixed_ips]))
            else:
                fixed_ips = [f for f in [self._allocate(network)] if f]
            port_security_on = req.get("port_security_enabled",
                                       network.get("port_security_enabled", True))
            if req.get("security_groups") is not None:
                for sg_id in req["security_groups"]:
                    if sg_id not in self._security_groups:
                        raise SecurityGroupNotFound(id=sg_id)
                security_groups = list(req["security_groups"])
            elif port_security_on:
                security_groups = [self.default_security_group(project_id)["id"]]
            else:
                security_groups = []
            now = _now()
            port = {
                "id": req.get("id") or str(uuid.uuid4()),
                "name": req.get("name", ""),
                "description": req.get("description", ""),
                "network_id": network["id"],
                "admin_state_up": req.get("admin_state_up", True),
                "status": "DOWN",
                "mac_address": req.get("mac_address") or self._mac(),
                "fixed_ips": fixed_ips,
                "tenant_id": project_id,
                "project_id": project_id,
                "device_id": req.get("device_id", ""),
                "device_owner": req.get("device_owner", ""),
                "allowed_address_pairs": req.get("allowed_address_pairs", []),
                "extra_dhcp_opts": req.get("extra_dhcp_opts", []),
                "ip_allocation": "immediate",
                "binding:host_id": "",
                "binding:profile": req.get("binding:profile", {}),
                "binding:vif_details": {},
                "binding:vif_type": "unbound",
                "binding:vnic_type": req.get("binding:vnic_type", "normal"),
                "port_security_enabled": port_security_on,
                "security_groups": security_groups,
                "tags": [],
                "created_at": now,
                "updated_at": now,
                "revision_number": 1,
            }
            self._ports[port["id"]] = port
            return copy.deepcopy(port)

    # -- NeutronFixture overrides (Nova calls these in-process) -----------
    def create_port(self, body=None):
        req = (body or {}).get("port", {})
        return {"port": self.new_port(req, req.get("tenant_id"))}

    def update_port(self, port_id, body=None):
        with self.lock:
            req = dict(body["port"])
            port = self._ports[port_id]
            host = req.get("binding:host_id", "absent")
            if host not in ("absent", None, ""):
                # Nova binds the port to a compute host: the mechanism
                # driver (ML2/OVS) answers with vif_type ovs.
                port["binding:vif_type"] = "ovs"
                port["binding:vif_details"] = {
                    "port_filter": True, "connectivity": "l2", "ovs_hybrid_plug": False,
                    "datapath_type": "system", "bridge_name": "br-int"}
            if host in (None, "") and not self._get_active_binding(port_id)[0]:
                req.pop("binding:host_id")  # nothing bound: nothing to unbind
                host = "absent"
            result = super().update_port(port_id, {"port": req})
            if host in (None, ""):
                port.update({"binding:host_id": "", "binding:vif_type": "unbound",
                             "binding:vif_details": {}, "status": "DOWN"})
            elif host != "absent":
                port["status"] = "ACTIVE" if port["admin_state_up"] else "DOWN"
            port["revision_number"] = port.get("revision_number", 0) + 1
            port["updated_at"] = _now()
            result["port"].update({k: port[k] for k in (
                "binding:host_id", "binding:vif_type", "binding:vif_details", "status",
                "revision_number", "updated_at") if k in port})
            return result

    def delete_port(self, port_id, **_params):
        with self.lock:
            super().delete_port(port_id, **_params)
            for fip in self._floatingips.values():
                if fip["port_id"] == port_id:
                    fip.update(port_id=None, fixed_ip_address=None, status="DOWN")

    def list_subnets(self, retrieve_all=True, **_params):
        return {"subnets": self._list_resource(self._subnets, retrieve_all, **_params)}

    def list_security_groups(self, retrieve_all=True, **_params):
        project = _params.get("tenant_id") or _params.get("project_id")
        if isinstance(project, str):
            self.default_security_group(project)
        return super().list_security_groups(retrieve_all, **_params)

    def list_floatingips(self, retrieve_all=True, **_params):
        return {"floatingips": self._list_resource(self._floatingips, retrieve_all,
                                                   **_params)}

    # -- floating IPs -------------------------------------------------------
    def new_floatingip(self, req, project_id):
        with self.lock:
            net = self._networks.get(req.get("floating_network_id"))
            if net is None:
                raise n_exc.NetworkNotFound(net_id=req.get("floating_network_id"))
            if not net.get("router:external"):
                raise n_exc.BadRequest(resource="floatingip",
                                       msg="Network %s is not a valid external network"
                                       % net["id"])
            addr = self._allocate(net, req.get("subnet_id"), req.get("floating_ip_address"))
            now = _now()
            fip = {"id": str(uuid.uuid4()), "floating_network_id": net["id"],
                   "floating_ip_address": addr["ip_address"], "router_id": None,
                   "port_id": None, "fixed_ip_address": None, "status": "DOWN",
                   "description": req.get("description", ""), "tags": [],
                   "tenant_id": req.get("tenant_id") or req.get("project_id") or project_id,
                   "dns_domain": "", "dns_name": "", "port_details": None,
                   "qos_policy_id": None, "created_at": now, "updated_at": now,
                   "revision_number": 0}
            fip["project_id"] = fip["tenant_id"]
            self.associate_floatingip(fip, req)
            self._floatingips[fip["id"]] = fip
            return copy.deepcopy(fip)

    def associate_floatingip(self, fip, req):
        if "port_id" not in req:
            return
        port_id = req["port_id"]
        if port_id is None:
            fip.update(port_id=None, fixed_ip_address=None, status="DOWN", router_id=None,
                       port_details=None)
        else:
            port = self._ports.get(port_id)
            if port is None:
                raise n_exc.PortNotFound(port_id=port_id)
            fixed = req.get("fixed_ip_address") or next(
                (f["ip_address"] for f in port["fixed_ips"]
                 if ipaddress.ip_address(f["ip_address"]).version == 4), None)
            if fixed is None:
                raise n_exc.BadRequest(resource="floatingip",
                                       msg="Port %s does not have an IPv4 address" % port_id)
            fip.update(port_id=port_id, fixed_ip_address=fixed, status="ACTIVE",
                       port_details={k: port[k] for k in (
                           "name", "network_id", "mac_address", "admin_state_up",
                           "status", "device_id", "device_owner")})
        fip["revision_number"] += 1
        fip["updated_at"] = _now()


class FakeNeutron:
    """WSGI app serving a :class:`HarnessNeutronFixture` as Neutron v2.0.

    Wrap it in keystonemiddleware's ``auth_token`` (see :func:`make_app`).
    """

    def __init__(self, fixture, notify_nova=None):
        self.fixture = fixture
        self.notify_nova = notify_nova
        self.requests = collections.deque(maxlen=10000)

    def _notify(self, name, ports):
        """Neutron's nova notifier: tell Nova about changes to ports bound to
        servers (``network-changed`` refreshes a server's network info)."""
        events = [{"name": name, "server_uuid": p["device_id"], "tag": p["id"]}
                  for p in ports if p and p.get("device_id")
                  and str(p.get("device_owner", "")).startswith("compute:")]
        if events and self.notify_nova is not None:
            self.notify_nova(events)

    def _ports(self, port_ids):
        return [self.fixture._ports.get(p) for p in port_ids if p]

    # -- request context ----------------------------------------------------
    @staticmethod
    def _context(environ):
        roles = {r.strip().lower() for r in environ.get("HTTP_X_ROLES", "").split(",")}
        return {"project_id": environ.get("HTTP_X_PROJECT_ID", ""),
                "is_admin": "admin" in roles}

    @staticmethod
    def _query(environ):
        query = {}
        for key, value in parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True):
            query.setdefault(key, []).append(value)
        return query

    # -- views ----------------------------------------------------------------
    def _std(self, resource):
        out = copy.deepcopy(resource)
        out.setdefault("tags", [])
        out.setdefault("created_at", self.fixture.created_at)
        out.setdefault("updated_at", self.fixture.created_at)
        out.setdefault("revision_number", 1)
        out.setdefault("description", "")
        return out

    def _view_network(self, net, ctx):
        out = self._std(net)
        if not ctx["is_admin"]:
            out = {k: v for k, v in out.items() if not k.startswith(ADMIN_ONLY_PREFIXES)}
        return out

    def _view_subnet(self, subnet, ctx):
        out = self._std(subnet)
        for key, value in (("subnetpool_id", None), ("service_types", []),
                           ("segment_id", None)):
            out.setdefault(key, value)
        return out

    def _view_port(self, port, ctx):
        out = self._std(port)
        self.fixture._merge_in_active_binding(out)
        if out.get("binding:host_id") is None:
            out["binding:host_id"] = ""
        for key, value in (("allowed_address_pairs", []), ("extra_dhcp_opts", []),
                           ("device_owner", ""), ("ip_allocation", "immediate")):
            out.setdefault(key, value)
        if not ctx["is_admin"]:
            out = {k: v for k, v in out.items()
                   if not k.startswith(ADMIN_ONLY_PREFIXES) and k != "resource_request"}
        return out

    def _view_sg(self, sg, ctx):
        out = self._std(sg)
        out["security_group_rules"] = [self._std(self.fixture.sg_rules[r])
                                       for r in sg["security_group_rules"]
                                       if r in self.fixture.sg_rules]
        out.setdefault("stateful", True)
        out.setdefault("shared", False)
        return out

    # -- visibility (Neutron's default policy) --------------------------------
    def _network_visible(self, net, ctx):
        return (ctx["is_admin"] or net["project_id"] == ctx["project_id"]
                or net.get("shared") or net.get("router:external"))

    def _visible(self, kind, res, ctx):
        if ctx["is_admin"]:
            return True
        if kind == "networks":
            return self._network_visible(res, ctx)
        if kind == "subnets":
            net = self.fixture._networks.get(res["network_id"])
            return net is not None and self._network_visible(net, ctx)
        if kind == "ports":
            net = self.fixture._networks.get(res["network_id"]) or {}
            return ctx["project_id"] in (res["project_id"], net.get("project_id"))
        return res.get("project_id") == ctx["project_id"]

    def _collection(self, kind, ctx):
        fx = self.fixture
        if kind == "security-groups":
            fx.default_security_group(ctx["project_id"])
        source = {"networks": (fx._networks, self._view_network),
                  "subnets": (fx._subnets, self._view_subnet),
                  "ports": (fx._ports, self._view_port),
                  "security-groups": (fx._security_groups, self._view_sg),
                  "security-group-rules": (fx.sg_rules, lambda r, c: self._std(r)),
                  "floatingips": (fx._floatingips, lambda r, c: self._std(r)),
                  "routers": ({}, None)}[kind]
        items, view = source
        return [view(r, ctx) for r in list(items.values()) if self._visible(kind, r, ctx)]

    # -- filtering ---------------------------------------------------------------
    @staticmethod
    def _matches(item, key, values):
        if key == "fixed_ips":
            for want in values:
                k, _, v = want.partition("=")
                if not any((k == "ip_address_substr" and v in f["ip_address"])
                           or f.get(k) == v for f in item.get("fixed_ips", [])):
                    return False
            return True
        if key in ("tags", "not-tags", "tags-any", "not-tags-any"):
            wanted = {t for v in values for t in v.split(",")}
            tags = set(item.get("tags") or [])
            return {"tags": wanted <= tags, "not-tags": not wanted <= tags,
                    "tags-any": bool(wanted & tags),
                    "not-tags-any": not (wanted & tags)}[key]
        have = item.get(key)
        for value in values:
            if isinstance(have, bool):
                if value.lower() in ("true", "1") and have:
                    return True
                if value.lower() in ("false", "0") and not have:
                    return True
            elif isinstance(have, list):
                if value in have:
                    return True
            elif have is None:
                if value in ("", "None", "null"):
                    return True
            elif str(have) == value:
                return True
        return False

    def _list(self, kind, ctx, query):
        items = self._collection(kind, ctx)
        fields = [f for v in query.pop("fields", []) for f in v.split(",") if f]
        for key in PAGINATION:
            query.pop(key, None)
        known = set()
        for item in items:
            known.update(item)
        known.update(("fixed_ips", "tags", "not-tags", "tags-any", "not-tags-any"))
        for key in query:
            if items and key not in known:
                raise HTTPBadRequest("[%s] is invalid attribute for filtering" % key)
        items = [i for i in items if all(self._matches(i, k, v) for k, v in query.items())]
        return [self._fields(i, fields) for i in items]

    @staticmethod
    def _fields(item, fields):
        if not fields:
            return item
        return {k: v for k, v in item.items() if k in fields}

    def _get(self, kind, rid, ctx, query):
        not_found = {"networks": lambda: n_exc.NetworkNotFound(net_id=rid),
                     "subnets": lambda: n_exc.SubnetNotFound(subnet_id=rid),
                     "ports": lambda: n_exc.PortNotFound(port_id=rid),
                     "security-groups": lambda: SecurityGroupNotFound(id=rid),
                     "security-group-rules": lambda: HTTPNotFound(),
                     "floatingips": lambda: l3_exc.FloatingIPNotFound(floatingip_id=rid),
                     "routers": lambda: l3_exc.RouterNotFound(router_id=rid)}[kind]
        for item in self._collection(kind, ctx):
            if item["id"] == rid:
                fields = [f for v in query.get("fields", []) for f in v.split(",") if f]
                return self._fields(item, fields)
        raise not_found()

    # -- writes ------------------------------------------------------------------
    def _check_project(self, req, ctx, action):
        owner = req.get("project_id") or req.get("tenant_id")
        if owner and owner != ctx["project_id"] and not ctx["is_admin"]:
            raise PolicyNotAuthorized(action=action)

    def _create_port(self, req, ctx):
        self._check_project(req, ctx, "create_port")
        net = self.fixture._networks.get(req.get("network_id"))
        if net is None or not self._network_visible(net, ctx):
            raise n_exc.NetworkNotFound(net_id=req.get("network_id"))
        if not ctx["is_admin"] and any(k.startswith("binding:") for k in req
                                       if k != "binding:vnic_type"):
            raise PolicyNotAuthorized(action="create_port:binding:profile")
        return self._view_port(self.fixture.new_port(req, ctx["project_id"]), ctx)

    def _update_port(self, rid, req, ctx):
        self._get("ports", rid, ctx, {})
        allowed = {"name", "description", "admin_state_up", "security_groups",
                   "allowed_address_pairs", "device_id", "device_owner", "extra_dhcp_opts",
                   "port_security_enabled", "fixed_ips", "binding:vnic_type",
                   "binding:host_id", "binding:profile"}
        bad = set(req) - allowed
        if bad:
            raise HTTPBadRequest("Cannot update read-only attribute %s" % sorted(bad)[0])
        if not ctx["is_admin"] and {"binding:host_id", "binding:profile"} & set(req):
            raise PolicyNotAuthorized(action="update_port:binding:host_id")
        fx = self.fixture
        with fx.lock:
            port = fx._ports[rid]
            if "security_groups" in req:
                for sg_id in req["security_groups"] or []:
                    if sg_id not in fx._security_groups:
                        raise SecurityGroupNotFound(id=sg_id)
            if "fixed_ips" in req:
                # Re-allocate with the port's own addresses free again.
                old, port["fixed_ips"] = port["fixed_ips"], []
                try:
                    net = fx._networks[port["network_id"]]
                    wanted, req["fixed_ips"] = req["fixed_ips"], []
                    for f in wanted:
                        req["fixed_ips"].append(fx._allocate(
                            net, f.get("subnet_id"), f.get("ip_address"),
                            taken=[x["ip_address"] for x in req["fixed_ips"]]))
                finally:
                    port["fixed_ips"] = old
            fx.update_port(rid, {"port": req})
        if "fixed_ips" in req:
            self._notify("network-changed", self._ports([rid]))
        return self._view_port(fx._ports[rid], ctx)

    def _delete_port(self, rid, ctx):
        self._get("ports", rid, ctx, {})
        port = copy.deepcopy(self.fixture._ports[rid])
        self.fixture.delete_port(rid)
        self._notify("network-vif-deleted", [port])

    def _create_fip(self, req, ctx):
        self._check_project(req, ctx, "create_floatingip")
        net = self.fixture._networks.get(req.get("floating_network_id"))
        if net is None or not self._network_visible(net, ctx):
            raise n_exc.NetworkNotFound(net_id=req.get("floating_network_id"))
        if req.get("port_id"):
            self._get("ports", req["port_id"], ctx, {})
        fip = self._std(self.fixture.new_floatingip(req, ctx["project_id"]))
        self._notify("network-changed", self._ports([fip["port_id"]]))
        return fip

    def _update_fip(self, rid, req, ctx):
        self._get("floatingips", rid, ctx, {})
        if req.get("port_id"):
            self._get("ports", req["port_id"], ctx, {})
        with self.fixture.lock:
            fip = self.fixture._floatingips[rid]
            before = fip["port_id"]
            if "description" in req:
                fip["description"] = req["description"]
            self.fixture.associate_floatingip(fip, req)
            out = self._std(fip)
        self._notify("network-changed", self._ports({before, out["port_id"]}))
        return out

    def _delete_fip(self, rid, ctx):
        self._get("floatingips", rid, ctx, {})
        fip = self.fixture._floatingips.pop(rid, None) or {}
        self._notify("network-changed", self._ports([fip.get("port_id")]))

    # -- routing -----------------------------------------------------------------
    SINGULAR = {"networks": "network", "subnets": "subnet", "ports": "port",
                "security-groups": "security_group",
                "security-group-rules": "security_group_rule",
                "floatingips": "floatingip", "routers": "router"}

    @staticmethod
    def _extensions():
        exts = [{"alias": d.ALIAS, "name": d.NAME, "description": d.DESCRIPTION,
                 "updated": d.UPDATED_TIMESTAMP, "links": []} for d in EXTENSIONS]
        return sorted(exts + [dict(SECURITY_GROUP_EXT)], key=lambda e: e["alias"])

    @staticmethod
    def _body(environ, method):
        """The JSON body of a POST or PUT request ({} for other methods)."""
        if method not in ("POST", "PUT"):
            return {}
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise HTTPBadRequest("Malformed request body")

    def _discovery(self, method, path, base):
        """(status, body) of GET / (versions), /v2.0 (resources) and /_harness/requests
        (the requests served so far); None for any other request."""
        if path == "" and method == "GET":
            return 200, {"versions": [{"id": "v2.0", "status": "CURRENT",
                                       "links": [{"href": base + "/v2.0/", "rel": "self"}]}]}
        if path == "/v2.0" and method == "GET":
            return 200, {"resources": [
                {"name": s, "collection": c,
                 "links": [{"href": "%s/v2.0/%s" % (base, c), "rel": "self"}]}
                for c, s in sorted(self.SINGULAR.items())]}
        if path == "/_harness/requests" and method == "GET":
            return 200, {"requests": list(self.requests)}
        return None

    def _extension_answer(self, rid):
        """(status, body) of GET /v2.0/extensions[/<alias RID>]."""
        exts = self._extensions()
        if rid is None:
            return 200, {"extensions": exts}
        for ext in exts:
            if ext["alias"] == rid:
                return 200, {"extension": ext}
        raise HTTPNotFound()

    def _write(self, kind, method, rid, body, ctx):
        """(status, body) of a POST, PUT or DELETE on KIND (RID: the resource's id, None
        for a POST); only ports (also created in bulk) and floating IPs are written."""
        single = self.SINGULAR[kind]
        writes = {
            ("ports", "POST"): lambda req: self._create_port(req, ctx),
            ("ports", "PUT"): lambda req: self._update_port(rid, req, ctx),
            ("ports", "DELETE"): lambda req: self._delete_port(rid, ctx),
            ("floatingips", "POST"): lambda req: self._create_fip(req, ctx),
            ("floatingips", "PUT"): lambda req: self._update_fip(rid, req, ctx),
            ("floatingips", "DELETE"): lambda req: self._delete_fip(rid, ctx),
        }
        handler = writes.get((kind, method))
        if handler is None or (method == "POST") != (rid is None):
            raise HTTPNotFound()
        if method == "DELETE":
            handler(None)
            return 204, None
        if method == "POST" and kind == "ports" and isinstance(body.get("ports"), list):
            return self._create_ports(handler, body["ports"])
        if single not in body or not isinstance(body[single], dict):
            raise HTTPBadRequest("Resource body required")
        result = handler(body[single])
        return (201 if method == "POST" else 200), {single: result}

    def _create_ports(self, create, reqs):
        """(status, body) of a bulk port create, {"ports": REQS}: all or nothing."""
        created = []
        try:
            for req in reqs:
                created.append(create(req))
        except n_exc.NeutronException:
            for item in created:
                self.fixture.delete_port(item["id"])
            raise
        return 201, {"ports": created}

    def dispatch(self, environ):
        """(status, body) of one request; an error answer is raised as a NeutronException."""
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "").rstrip("/")
        if path.endswith(".json"):
            path = path[:-len(".json")]
        base = "http://%s%s" % (environ.get("HTTP_HOST", ""), environ.get("SCRIPT_NAME", ""))
        ctx = self._context(environ)
        query = self._query(environ)
        body = self._body(environ, method)
        answer = self._discovery(method, path, base)
        if answer is not None:
            return answer
        parts = path.split("/")[1:]
        if len(parts) < 2 or parts[0] != "v2.0":
            raise HTTPNotFound()
        kind, rid = parts[1], (parts[2] if len(parts) == 3 else None)
        if len(parts) > 3:
            raise HTTPNotFound()
        if kind == "extensions" and method == "GET":
            return self._extension_answer(rid)
        if kind not in self.SINGULAR:
            raise HTTPNotFound()
        if method == "GET":
            if rid is None:
                return 200, {kind.replace("-", "_"): self._list(kind, ctx, query)}
            return 200, {self.SINGULAR[kind]: self._get(kind, rid, ctx, query)}
        return self._write(kind, method, rid, body, ctx)

    def __call__(self, environ, start_response):
        try:
            status, body = self.dispatch(environ)
        except n_exc.NeutronException as exc:
            status = _status(exc)
            if isinstance(exc, HTTPNotFound):
                LOG.warning("UNSERVED by the fake Neutron: %s %s?%s",
                            environ["REQUEST_METHOD"], environ.get("PATH_INFO"),
                            environ.get("QUERY_STRING", ""))
            body = {"NeutronError": {"type": type(exc).__name__, "message": str(exc),
                                     "detail": ""}}
        self.requests.append({"method": environ["REQUEST_METHOD"],
                              "path": environ.get("PATH_INFO", ""),
                              "query": environ.get("QUERY_STRING", ""), "status": status})
        reasons = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request",
                   403: "Forbidden", 404: "Not Found", 409: "Conflict"}
        data = b"" if body is None else json.dumps(body).encode()
        headers = [("Content-Length", str(len(data))),
                   ("X-Openstack-Request-Id", "req-" + str(uuid.uuid4()))]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        start_response("%d %s" % (status, reasons.get(status, "")), headers)
        return [data]


def make_app(fixture, notify_nova=None):
    """``(FakeNeutron, wsgi_app)``: the fake behind the real keystonemiddleware
    ``auth_token`` (token look-ups answered by Nova's ``AuthTokenFixture``);
    only ``/_harness/...`` bypasses authentication."""
    from keystonemiddleware import auth_token
    app = FakeNeutron(fixture, notify_nova)
    authed = auth_token.AuthProtocol(app, {"delay_auth_decision": False})

    def route(environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/_harness/"):
            return app(environ, start_response)
        return authed(environ, start_response)
    return app, route
