"""Ports, addresses and scaling policies through real Heat and Nova.

The fake Neutron (``fakeneutron.py``) serves over HTTP the very
``NeutronFixture`` that Nova's own neutron calls use, so a port that Heat
creates with ``OS::Neutron::Port`` is the port Nova binds, and the address
Nova reports is the port's fixed IP. The fake Keystone serves the stack users
that ``OS::Heat::ScalingPolicy`` needs.
"""
import ipaddress
import uuid

import pytest
from heatclient import exc as heat_exc
from neutronclient.common import exceptions as neutron_exc

import osharness

pytestmark = pytest.mark.openstack

PORT_SERVER = {"port_server.yaml": osharness.template("port_server.yaml")}


def _name(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def _outputs(heat, stack_id):
    return {o["output_key"]: o["output_value"] for o in heat.stacks.get(stack_id).outputs}


def _delete(heat, stack_id, timeout=90):
    """Delete a stack and wait; fails the test on DELETE_FAILED."""
    heat.stacks.delete(stack_id)

    def done():
        try:
            stack = heat.stacks.get(stack_id)
        except heat_exc.HTTPNotFound:
            return "DELETE_COMPLETE"
        if stack.stack_status == "DELETE_FAILED":
            pytest.fail("stack delete failed: %s" % stack.stack_status_reason)
        return stack.stack_status == "DELETE_COMPLETE" and stack.stack_status
    return osharness.wait_for(done, timeout, interval=0.5, what="stack delete")


def _addresses(server, network):
    """Fixed IPv4 addresses of a novaclient server on ``network``."""
    return [a["addr"] for a in server.addresses.get(network, [])
            if a.get("OS-EXT-IPS:type", "fixed") == "fixed" and a["version"] == 4]


# ---------------------------------------------------------------------------
# Three servers, each on its own OS::Neutron::Port, one anti-affinity group.

@pytest.fixture(scope="module", params=["admin", "member"])
def port_stack(request, openstack_heat):
    """neutron_group.yaml created by ``admin`` or by ``member``."""
    cloud, user = openstack_heat, request.param
    heat = cloud.heat(user)
    created = heat.stacks.create(
        stack_name=_name("ports-" + user), template=osharness.template("neutron_group.yaml"),
        files=PORT_SERVER,
        parameters={"image": cloud.image, "network": cloud.network,
                    "count": len(cloud.hosts)})
    stack_id = created["stack"]["id"]
    stack = osharness.wait_stack(heat, stack_id, timeout=180)
    yield {"cloud": cloud, "user": user, "heat": heat, "stack": stack, "id": stack_id}
    try:
        if heat.stacks.get(stack_id).stack_status != "DELETE_COMPLETE":
            _delete(heat, stack_id)
    except Exception:  # noqa: BLE001 - best effort; the cloud dies with the session
        pass


def test_port_servers_active_on_distinct_hosts(port_stack):
    cloud, heat = port_stack["cloud"], port_stack["heat"]
    stack = port_stack["stack"]
    assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason
    outputs = _outputs(heat, stack.id)
    server_ids = outputs["server_ids"]
    assert len(server_ids) == len(cloud.hosts)
    admin = cloud.nova("admin")
    servers = [admin.servers.get(s) for s in server_ids]
    assert [s.status for s in servers] == ["ACTIVE"] * len(servers)
    assert sorted(getattr(s, "OS-EXT-SRV-ATTR:host") for s in servers) == cloud.hosts
    group = admin.server_groups.get(outputs["group_id"])
    assert sorted(group.members) == sorted(server_ids)


def test_nova_addresses_are_the_port_fixed_ips(port_stack):
    """As the stack's user: Nova's address, the port's fixed IP and Heat's
    ``get_attr`` agree, and the port is bound to the server."""
    cloud, user, heat = port_stack["cloud"], port_stack["user"], port_stack["heat"]
    outputs = _outputs(heat, port_stack["id"])
    neutron = cloud.neutron(user)
    listed = {s.id: s for s in cloud.nova(user).servers.list(detailed=True)}
    subnet = ipaddress.ip_network(cloud.networks[cloud.network]["cidr"], strict=False)
    seen = set()
    for server_id, port_id, heat_ip in zip(outputs["server_ids"], outputs["port_ids"],
                                           outputs["port_ips"]):
        port = neutron.show_port(port_id)["port"]
        port_ip = port["fixed_ips"][0]["ip_address"]
        assert _addresses(listed[server_id], cloud.network) == [port_ip]
        assert heat_ip == port_ip
        assert ipaddress.ip_address(port_ip) in subnet
        assert port["device_id"] == server_id
        assert port["device_owner"].startswith("compute:")
        assert port["status"] == "ACTIVE"
        assert port["network_id"] == cloud.network_id
        assert port["project_id"] == cloud.project_id("admin" if user == "admin" else "demo")
        seen.add(port_ip)
    assert len(seen) == len(outputs["server_ids"])


def test_port_binding_names_the_server_host(port_stack):
    """Only admin sees ``binding:host_id`` (Neutron's policy); it is the host
    Nova put the server on."""
    cloud, heat = port_stack["cloud"], port_stack["heat"]
    outputs = _outputs(heat, port_stack["id"])
    admin_neutron, admin_nova = cloud.neutron("admin"), cloud.nova("admin")
    for server_id, port_id in zip(outputs["server_ids"], outputs["port_ids"]):
        port = admin_neutron.show_port(port_id)["port"]
        host = getattr(admin_nova.servers.get(server_id), "OS-EXT-SRV-ATTR:host")
        assert port["binding:host_id"] == host
        assert port["binding:vif_type"] == "ovs"
    if port_stack["user"] == "member":
        port = cloud.neutron("member").show_port(outputs["port_ids"][0])["port"]
        assert not any(k.startswith("binding:") for k in port), sorted(port)


def test_heat_server_addresses_attribute(port_stack):
    """Heat resolves ``{get_attr: [server, addresses]}`` through Neutron
    (ports by device_id, networks, subnets, floating IPs) as the stack's
    user: each entry names the server's port and subnet."""
    cloud, heat = port_stack["cloud"], port_stack["heat"]
    outputs = _outputs(heat, port_stack["id"])
    assert len(outputs["server_addresses"]) == len(cloud.hosts)
    for addresses, port_id, port_ip in zip(outputs["server_addresses"], outputs["port_ids"],
                                           outputs["port_ips"]):
        (entry,) = addresses[cloud.network]
        assert entry["port"] == port_id
        assert entry["addr"] == port_ip
        assert entry["OS-EXT-IPS:type"] == "fixed"
        assert [s["id"] for s in entry["subnets"]] == [cloud.subnet_id]
        assert entry["network"]["id"] == cloud.network_id
        # Heat adds the same list under the network id.
        assert addresses[cloud.network_id] == addresses[cloud.network]


def test_stack_delete_removes_ports(port_stack):
    """Runs last for each user: deletes the stack."""
    cloud, user, heat = port_stack["cloud"], port_stack["user"], port_stack["heat"]
    outputs = _outputs(heat, port_stack["id"])
    neutron = cloud.neutron(user)
    assert len(neutron.list_ports(id=outputs["port_ids"])["ports"]) == len(outputs["port_ids"])
    _delete(heat, port_stack["id"])
    assert neutron.list_ports(id=outputs["port_ids"])["ports"] == []
    for port_id in outputs["port_ids"]:
        with pytest.raises(neutron_exc.PortNotFoundClient):
            neutron.show_port(port_id)
    remaining = {s.id for s in cloud.nova(user).servers.list()}
    assert not remaining & set(outputs["server_ids"])


# ---------------------------------------------------------------------------
# AutoScalingGroup of port servers with scale-up/down ScalingPolicy resources.

def _members(heat, stack_id):
    """Server ids of the ASG's members, or None while one is not complete."""
    resources = heat.resources.list(stack_id, nested_depth=2)
    servers = [r for r in resources if r.resource_type == "OS::Nova::Server"]
    if not all(r.resource_status == "CREATE_COMPLETE" for r in servers):
        return None
    return {r.physical_resource_id for r in servers}


def _scale(heat, stack_id, signal, count, timeout=90):
    """Send ``signal()`` and wait until the ASG has ``count`` complete members."""
    nested = heat.resources.get(stack_id, "asg").physical_resource_id
    before = heat.stacks.get(nested).updated_time
    signal()
    osharness.wait_for(lambda: heat.stacks.get(nested).updated_time != before, 30,
                       what="scaling to start")
    done = osharness.wait_stack(heat, nested, timeout=timeout)
    assert done.stack_status == "UPDATE_COMPLETE", done.stack_status_reason
    def counted():
        members = _members(heat, stack_id)
        return members if members is not None and len(members) == count else None
    members = osharness.wait_for(counted, 30, what="%d members" % count)
    # Heat refuses the next signal ("already in scaling") until the group
    # has recorded the end of this one in its metadata.
    osharness.wait_for(
        lambda: heat.resources.metadata(stack_id, "asg").get("scaling_in_progress") is False,
        30, what="the group to finish scaling")
    return members


@pytest.fixture(scope="module")
def scaling_stack(openstack_heat):
    cloud = openstack_heat
    heat = cloud.heat("admin")
    created = heat.stacks.create(
        stack_name=_name("asg"), template=osharness.template("asg_scaling.yaml"),
        files=PORT_SERVER, parameters={"image": cloud.image, "network": cloud.network,
                                       "desired": 1})
    stack_id = created["stack"]["id"]
    stack = osharness.wait_stack(heat, stack_id, timeout=180)
    yield {"cloud": cloud, "heat": heat, "stack": stack, "id": stack_id}
    try:
        if heat.stacks.get(stack_id).stack_status != "DELETE_COMPLETE":
            _delete(heat, stack_id)
    except Exception:  # noqa: BLE001 - best effort
        pass


def _identity(cloud, path, method="GET"):
    """Status and body of an admin call to the fake Keystone."""
    resp = cloud.session("admin").request(cloud.auth_url + path, method, raise_exc=False)
    return resp.status_code, (resp.json() if resp.content else None)


def test_scaling_policies_have_stack_users(scaling_stack):
    """Heat made one Keystone user per policy, in heat_stack_user."""
    cloud, heat = scaling_stack["cloud"], scaling_stack["heat"]
    stack = scaling_stack["stack"]
    assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason
    for policy in ("scale_up", "scale_down"):
        user_id = heat.resources.get(stack.id, policy).physical_resource_id
        status, body = _identity(cloud, "/users/" + user_id)
        assert status == 200, body
        assert body["user"]["default_project_id"] == cloud.project_id("admin")
        status, _ = _identity(cloud, "/projects/%s/users/%s/roles/heat_stack_user"
                              % (cloud.project_id("admin"), user_id), "HEAD")
        assert status == 204


def test_scale_up_signal_adds_a_member_with_an_address(scaling_stack):
    cloud, heat, stack_id = scaling_stack["cloud"], scaling_stack["heat"], scaling_stack["id"]
    before = _members(heat, stack_id)
    assert before is not None and len(before) == 1
    after = _scale(heat, stack_id, lambda: heat.resources.signal(stack_id, "scale_up"), 2)
    assert before < after
    admin, neutron = cloud.nova("admin"), cloud.neutron("admin")
    listed = {s.id: s for s in admin.servers.list(detailed=True)}
    hosts = set()
    for server_id in after:
        assert listed[server_id].status == "ACTIVE"
        (port,) = neutron.list_ports(device_id=server_id)["ports"]
        assert _addresses(listed[server_id], cloud.network) == [
            port["fixed_ips"][0]["ip_address"]]
        hosts.add(getattr(listed[server_id], "OS-EXT-SRV-ATTR:host"))
    assert len(hosts) == 2   # anti-affinity holds for the new member too


def test_signal_url_with_a_token_scales_up_and_down(scaling_stack):
    """The policies' ``signal_url`` (Heat's native API), POSTed with a token
    as an alarm service would; then ``scale_down`` through heatclient."""
    cloud, heat, stack_id = scaling_stack["cloud"], scaling_stack["heat"], scaling_stack["id"]
    before = _members(heat, stack_id)
    assert len(before) == 2
    url = heat.resources.get(stack_id, "scale_up").attributes["signal_url"]
    assert url.startswith(cloud.heat_url + "/v1/" + cloud.project_id("admin") + "/stacks/")
    session = cloud.session("admin")
    after = _scale(heat, stack_id, lambda: session.post(url, json={}), 3)
    assert before < after and len(after) == len(cloud.hosts)
    listed = {s.id: s for s in cloud.nova("admin").servers.list(detailed=True)}
    assert all(_addresses(listed[s], cloud.network) for s in after)

    down = _scale(heat, stack_id, lambda: heat.resources.signal(stack_id, "scale_down"), 2)
    (removed,) = after - down
    assert cloud.neutron("admin").list_ports(device_id=removed)["ports"] == []


def test_policy_alarm_url_makes_ec2_credentials_and_delete_cleans_up(scaling_stack):
    """Runs last in this group: ``alarm_url`` (the pre-signed CFN URL) makes
    Heat create an EC2 credential for the policy's stack user; deleting the
    stack deletes users, credentials and ports."""
    cloud, heat, stack_id = scaling_stack["cloud"], scaling_stack["heat"], scaling_stack["id"]
    policy = heat.resources.get(stack_id, "scale_up")
    user_id = policy.physical_resource_id
    assert "AWSAccessKeyId=" in policy.attributes["alarm_url"]
    status, body = _identity(cloud, "/credentials?user_id=" + user_id)
    assert status == 200 and [c["type"] for c in body["credentials"]] == ["ec2"]
    members = _members(heat, stack_id)
    neutron = cloud.neutron("admin")
    port_ids = [p["id"] for s in members for p in neutron.list_ports(device_id=s)["ports"]]
    assert len(port_ids) == len(members)

    _delete(heat, stack_id)
    assert _identity(cloud, "/users/" + user_id)[0] == 404
    assert _identity(cloud, "/credentials?user_id=" + user_id)[1]["credentials"] == []
    assert neutron.list_ports(id=port_ids)["ports"] == []


def test_member_scaling_policy_needs_a_stack_user_domain(openstack_heat):
    """With heat.conf's legacy stack users (no stack_user_domain), Heat
    creates them with the stack owner's trust; Keystone's policy refuses a
    plain project member, as on a real cloud."""
    heat = openstack_heat.heat("member")
    created = heat.stacks.create(
        stack_name=_name("asg-member"), template=osharness.template("asg_scaling.yaml"),
        files=PORT_SERVER, parameters={"image": openstack_heat.image,
                                       "network": openstack_heat.network, "desired": 0})
    stack = osharness.wait_stack(heat, created["stack"]["id"], timeout=120)
    try:
        assert stack.stack_status == "CREATE_FAILED"
        assert "identity:list_roles" in stack.stack_status_reason
        assert "403" in stack.stack_status_reason
    finally:
        _delete(heat, stack.id)


# ---------------------------------------------------------------------------
# Other network shapes Heat creates, and errors.

def test_server_on_a_network_by_name_gets_a_nova_port(openstack_heat):
    """``networks: [{network: <name>}]``: Heat resolves the name, Nova makes
    the port (and deletes it with the server)."""
    cloud = openstack_heat
    heat, neutron = cloud.heat("member"), cloud.neutron("member")
    created = heat.stacks.create(
        stack_name=_name("netsrv"), template=osharness.template("network_server.yaml"),
        parameters={"image": cloud.image, "network": cloud.network})
    stack = osharness.wait_stack(heat, created["stack"]["id"], timeout=120)
    assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason
    server_id = _outputs(heat, stack.id)["server_id"]
    (port,) = neutron.list_ports(device_id=server_id)["ports"]
    server = cloud.nova("member").servers.get(server_id)
    assert _addresses(server, cloud.network) == [port["fixed_ips"][0]["ip_address"]]
    assert port["network_id"] == cloud.network_id
    assert port["project_id"] == cloud.project_id("demo")
    _delete(heat, stack.id)
    assert neutron.list_ports(id=port["id"])["ports"] == []


def test_floating_ip_shows_in_nova_addresses(openstack_heat):
    cloud = openstack_heat
    heat = cloud.heat("member")
    created = heat.stacks.create(
        stack_name=_name("fip"), template=osharness.template("floating_ip.yaml"),
        parameters={"image": cloud.image, "network": cloud.network,
                    "external_network": cloud.external_network})
    stack = osharness.wait_stack(heat, created["stack"]["id"], timeout=120)
    try:
        assert stack.stack_status == "CREATE_COMPLETE", stack.stack_status_reason
        outputs = _outputs(heat, stack.id)
        public = ipaddress.ip_network(cloud.networks[cloud.external_network]["cidr"])
        assert ipaddress.ip_address(outputs["floating_ip"]) in public
        nova = cloud.nova("member")

        def both():
            addresses = nova.servers.get(outputs["server_id"]).addresses[cloud.network]
            return len(addresses) == 2 and addresses
        addresses = osharness.wait_for(both, 30, what="floating IP in Nova's addresses")
        by_type = {a["OS-EXT-IPS:type"]: a["addr"] for a in addresses}
        assert by_type == {"fixed": outputs["port_ip"], "floating": outputs["floating_ip"]}
    finally:
        _delete(heat, stack.id)
    assert cloud.neutron("member").list_floatingips(
        floating_ip_address=outputs["floating_ip"])["floatingips"] == []


def test_port_on_a_missing_network_fails_the_stack(openstack_heat):
    """Heat looks the network up in Neutron before it creates anything; the
    empty answers become neutronclient's "Unable to find network", which Heat
    reports as a property error of the port."""
    heat = openstack_heat.heat("member")
    name = _name("missing")
    with pytest.raises(heat_exc.HTTPBadRequest) as err:
        heat.stacks.create(stack_name=name, template=osharness.template(
            "missing_network.yaml"), parameters={"network": "no-such-network"})
    message = str(err.value)
    assert "resources.port.properties.network" in message
    assert "Unable to find network with name or id 'no-such-network'" in message
    assert not [s for s in heat.stacks.list() if s.stack_name == name]


def test_neutron_not_found_wire_format(openstack_cloud):
    """What Neutron itself answers (and what clients parse): NeutronError
    bodies, 404 for a port or a network that does not exist."""
    cloud = openstack_cloud
    session = cloud.session("member")
    base = cloud.network_url + "/v2.0"
    missing = str(uuid.uuid4())
    resp = session.get(base + "/ports/" + missing, raise_exc=False)
    assert resp.status_code == 404
    assert resp.json() == {"NeutronError": {
        "type": "PortNotFound", "message": "Port %s could not be found." % missing,
        "detail": ""}}
    resp = session.post(base + "/ports", json={"port": {"network_id": missing}},
                        raise_exc=False)
    assert resp.status_code == 404
    assert resp.json()["NeutronError"]["type"] == "NetworkNotFound"
    assert resp.json()["NeutronError"]["message"] == (
        "Network %s could not be found." % missing)
    with pytest.raises(neutron_exc.NetworkNotFoundClient):
        cloud.neutron("member").create_port({"port": {"network_id": missing}})


def test_neutron_wire_format(openstack_cloud):
    """Envelopes, filters, ``fields``, 201 on create, 204 on delete,
    deterministic addresses, per-project visibility."""
    cloud = openstack_cloud
    session = cloud.session("member")
    base = cloud.network_url + "/v2.0"
    name = _name("wire")
    resp = session.post(base + "/ports", json={"port": {
        "network_id": cloud.network_id, "name": name,
        "fixed_ips": [{"subnet_id": cloud.subnet_id}]}})
    assert resp.status_code == 201
    port = resp.json()["port"]
    try:
        assert port["status"] == "DOWN" and port["device_id"] == ""
        assert port["mac_address"].startswith("fa:16:3e:")
        assert port["security_groups"] and port["revision_number"] == 1
        assert not any(k.startswith("binding:") for k in port)
        ip = port["fixed_ips"][0]["ip_address"]
        # The lowest free address: nothing in use below it on the subnet.
        used = {f["ip_address"] for p in cloud.neutron("admin").list_ports(
            network_id=cloud.network_id)["ports"] for f in p["fixed_ips"]}
        subnet = cloud.neutron("admin").show_subnet(cloud.subnet_id)["subnet"]
        first = ipaddress.ip_address(subnet["allocation_pools"][0]["start"])
        below = {str(first + i) for i in range(int(ipaddress.ip_address(ip)) - int(first))}
        assert below <= used | {subnet["gateway_ip"]}

        listed = session.get(base + "/ports?name=%s&fields=id&fields=fixed_ips" % name).json()
        assert listed == {"ports": [{"id": port["id"], "fixed_ips": port["fixed_ips"]}]}
        by_ip = session.get(base + "/ports?fixed_ips=ip_address%%3D%s" % ip).json()["ports"]
        assert [p["id"] for p in by_ip] == [port["id"]]
        nets = session.get(base + "/networks?name=%s" % cloud.network).json()["networks"]
        assert [n["id"] for n in nets] == [cloud.network_id]
        assert "provider:network_type" not in nets[0]
        bad = session.get(base + "/ports?no_such_attr=1", raise_exc=False)
        assert bad.status_code == 400 and bad.json()["NeutronError"]["type"] == "HTTPBadRequest"
        clash = session.post(base + "/ports", raise_exc=False, json={"port": {
            "network_id": cloud.network_id, "fixed_ips": [{"ip_address": ip}]}})
        assert clash.status_code == 409
        assert clash.json()["NeutronError"]["type"] == "IpAddressInUse"
        # Another project's port is invisible to the member.
        admin_port = cloud.neutron("admin").create_port({"port": {
            "network_id": cloud.networks[cloud.external_network]["id"]}})["port"]
        try:
            assert session.get(base + "/ports/" + admin_port["id"],
                               raise_exc=False).status_code == 404
        finally:
            cloud.neutron("admin").delete_port(admin_port["id"])
        aliases = {e["alias"] for e in session.get(base + "/extensions").json()["extensions"]}
        assert {"security-group", "port-security", "external-net", "router"} <= aliases
    finally:
        resp = session.delete(base + "/ports/" + port["id"])
    assert resp.status_code == 204 and resp.content == b""
