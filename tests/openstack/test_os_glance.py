"""The harness's Glance (``fakeglance.py``) through openstacksdk, the way Tacker v1 uploads
a VNF package's image (``tacker/vnfm/infra_drivers/openstack/glance_client.py``): the
image becomes active with Glance's SHA-512 hash, Nova boots it, and it can be deleted."""
import hashlib

import pytest

import osharness

pytestmark = pytest.mark.openstack


@pytest.fixture
def sdk(openstack_cloud):
    from openstack import connection
    return connection.Connection(session=openstack_cloud.session("member"))


@pytest.fixture
def image_file(tmp_path):
    path = tmp_path / "tiny.qcow2"
    path.write_bytes(b"QFI\xfb" + bytes(range(256)) * 300)
    return path


def test_an_uploaded_image_is_active_with_glances_hashes_and_nova_boots_it(
        openstack_cloud, sdk, image_file):
    data = image_file.read_bytes()
    image = sdk.image.create_image(
        "vnf-image", allow_duplicates=True, filename=str(image_file), min_disk=1,
        min_ram=0, disk_format="qcow2", container_format="bare", visibility="private")
    shown = sdk.image.get_image(image.id)
    assert (shown.status, shown.size, shown.visibility) == ("active", len(data), "private")
    assert (shown.hash_algo, shown.hash_value) == ("sha512", hashlib.sha512(data).hexdigest())
    assert shown.checksum == hashlib.md5(data).hexdigest()
    assert [i.id for i in sdk.image.images(name="vnf-image")] == [image.id]

    nova = openstack_cloud.nova("member", version="2.64")
    server = nova.servers.create("from-upload", image=image.id, flavor="1", nics="none")
    assert osharness.wait_server(nova, server.id, timeout=60).status == "ACTIVE"
    nova.servers.delete(server.id)

    sdk.image.delete_image(image.id)
    assert sdk.image.find_image(image.id) is None


def test_upload_twice_and_unknown_images_are_refused(sdk, image_file):
    from openstack import exceptions
    image = sdk.image.create_image("once", allow_duplicates=True, filename=str(image_file),
                                   disk_format="qcow2", container_format="bare")
    assert image.upload(sdk.image, data=b"again").status_code == 409
    with pytest.raises(exceptions.NotFoundException):
        sdk.image.get_image("00000000-0000-0000-0000-000000000000")
    sdk.image.delete_image(image.id)


def test_without_a_token_only_version_discovery_answers(openstack_cloud):
    import requests
    base = openstack_cloud.info["image_url"]
    assert requests.get(base + "/versions", timeout=10).status_code == 200
    assert requests.get(base + "/v2/images", timeout=10).status_code == 401


def test_heat_refuses_an_image_name_two_images_share(openstack_heat, image_file):
    """Why VNF-A's TOSCA flavour uploads its image under a name of its own
    (doc/packages.md): Heat's ``glance.image`` constraint, which the BaseHOT flavours'
    image-by-name goes through, refuses a name that matches two images."""
    import uuid

    from heatclient import exc as heat_exc
    from openstack import connection
    sdk = connection.Connection(session=openstack_heat.session("admin"))
    heat = openstack_heat.heat("admin")
    name = "shared-" + uuid.uuid4().hex[:8]
    template = {"heat_template_version": "2018-08-31", "resources": {}, "parameters": {
        "image": {"type": "string", "constraints": [{"custom_constraint": "glance.image"}]}}}

    def create_stack():
        return heat.stacks.create(stack_name="img-" + uuid.uuid4().hex[:8], template=template,
                                  parameters={"image": name})["stack"]["id"]

    made = []
    try:
        for _ in range(2):
            made.append(sdk.image.create_image(name, allow_duplicates=True,
                                               filename=str(image_file), disk_format="qcow2",
                                               container_format="bare"))
            if len(made) == 1:
                heat.stacks.delete(create_stack())          # one image: accepted
        with pytest.raises(heat_exc.HTTPBadRequest) as refused:
            create_stack()
        assert "No images unique match found for {'name': '%s'}" % name in str(refused.value)
    finally:
        for image in made:
            sdk.image.delete_image(image.id)
