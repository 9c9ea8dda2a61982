"""Capture the Heat and Nova answers the driver reads, from the real harness.

    python tests/mgmt/capture.py        # writes tests/mgmt/data/*.json

Starts Nova 34 + Heat 27 (tests/openstack), creates the worker stack of
templates/k8s_workers.yaml (3 members, each a port and a server), and stores
exactly what ``GET /stacks/{id}/resources?nested_depth=2`` and
``GET /servers/detail`` answered (admin), for openstack_replay.py.
"""
import json
import os
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "openstack"))
sys.path.insert(0, os.path.dirname(HERE))      # tests/: controlplane.harness, for osharness


def main():
    import osharness
    cloud = osharness.OpenStackCloud(computes=3, python=osharness.python_or_skip())
    cloud.start()
    try:
        cloud.start_heat()
        heat = cloud.heat("admin")
        read = {n: open(os.path.join(HERE, "templates", n)).read()
                for n in ("k8s_workers.yaml", "worker_member.yaml")}
        stack = heat.stacks.create(stack_name="capture-" + uuid.uuid4().hex[:6],
                                   template=read["k8s_workers.yaml"],
                                   files={"worker_member.yaml": read["worker_member.yaml"]},
                                   parameters={"image": cloud.image, "network": cloud.network})
        stack_id = stack["stack"]["id"]
        osharness.wait_stack(heat, stack_id, timeout=240)
        session = cloud.session("admin")
        res = session.get("/stacks/%s/resources?nested_depth=2" % stack_id,
                          endpoint_filter={"service_type": "orchestration"}).json()
        servers = session.get("/servers/detail", endpoint_filter={
            "service_type": "compute"}).json()
        os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
        res.update({"stack_id": stack_id, "aspect_id": "worker_instance"})
        for name, doc in (("heat_resources.json", res), ("nova_servers.json", servers)):
            with open(os.path.join(HERE, "data", name), "w") as f:
                json.dump(doc, f, indent=1, sort_keys=True)
                f.write("\n")
        print("captured %d resources, %d servers" % (len(res["resources"]),
                                                      len(servers["servers"])))
    finally:
        cloud.stop()


if __name__ == "__main__":
    main()
