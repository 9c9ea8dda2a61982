"""Paging and error mapping of the Kubernetes adapter's lists.

The happy paths and real errors (403, unreachable, bad kubeconfig) run
against the real API server in tests/controlplane/test_plan_live.py. An
expired continue token (410 Gone) needs etcd compaction in the middle of a
list, so here the list call is a stand-in that answers with the API's JSON
and raises the client's own ApiException.
"""
import json

import pytest
from kubernetes.client.exceptions import ApiException

from tacker_hwaffinity.kube import lists
from tacker_hwaffinity.kube.client import KubeError


class Conn:
    where = "https://127.0.0.1:6443 (context test)"

    @staticmethod
    def timeout():
        return (1, 1)


class Response:
    def __init__(self, page):
        self.data = json.dumps(page).encode()


def pages(names, size, version="42"):
    out = {}
    for i in range(0, len(names), size):
        token = "t%d" % (i + size) if i + size < len(names) else ""
        out["t%d" % i if i else None] = {
            "metadata": {"resourceVersion": version, "continue": token},
            "items": [{"metadata": {"name": n}} for n in names[i:i + size]]}
    return out


def lister(book, fail=None):
    calls = []

    def call(**kw):
        calls.append(kw)
        token = kw.get("_continue")
        if fail and fail(len(calls), token):
            raise ApiException(status=410, reason="Gone")
        return Response(book[token])
    return call, calls


def test_every_page_is_read_and_kind_filled_in():
    names = ["n%d" % i for i in range(7)]
    call, calls = lister(pages(names, 3))
    seen = []
    items, version = lists.list_json(Conn, call, "Node", "nodes", page_size=3,
                                     each=lambda o: seen.append(o["metadata"]["name"]))
    assert [o["metadata"]["name"] for o in items] == names == seen
    assert version == "42" and all(o["kind"] == "Node" and o["apiVersion"] == "v1"
                                   for o in items)
    assert [c.get("_continue") for c in calls] == [None, "t3", "t6"]
    assert all(c["limit"] == 3 and c["_preload_content"] is False for c in calls)


def test_the_continue_token_replaces_the_resource_version():
    call, calls = lister(pages(["a", "b", "c"], 2))
    lists.list_json(Conn, call, "Pod", "pods", page_size=2, resource_version="7",
                    resource_version_match="Exact")
    assert calls[0]["resource_version"] == "7"
    assert "resource_version" not in calls[1] and "resource_version_match" not in calls[1]


def test_an_expired_continue_token_restarts_the_list():
    call, calls = lister(pages(["a", "b", "c", "d"], 2),
                         fail=lambda n, token: n == 2 and token)
    items, _ = lists.list_json(Conn, call, "Pod", "pods", page_size=2)
    assert [o["metadata"]["name"] for o in items] == ["a", "b", "c", "d"]
    assert [c.get("_continue") for c in calls] == [None, "t2", None, "t2"]


def test_a_list_that_keeps_expiring_gives_up_with_one_line():
    call, calls = lister(pages(["a", "b", "c"], 1), fail=lambda n, token: bool(token))
    with pytest.raises(KubeError) as e:
        lists.list_json(Conn, call, "Pod", "pods", page_size=1)
    assert "kept expiring" in str(e.value) and len(calls) == 2 * (lists.RELISTS + 1)


@pytest.mark.parametrize("status, words", [
    (401, "unauthorized: the credentials were refused while trying to list nodes"),
    (403, "forbidden to list nodes: the identity needs list on them"),
    (500, "cannot list nodes: HTTP 500: etcd is sad"),
])
def test_api_errors_are_one_line_with_the_server(status, words):
    e = ApiException(status=status, reason="x")
    e.body = json.dumps({"kind": "Status", "message": "etcd is sad"})
    err = lists.api_error(Conn, "list", "nodes", e)
    assert str(err).startswith("API server https://127.0.0.1:6443 (context test): ")
    assert words in str(err) and "\n" not in str(err) and err.status == status


def test_a_410_on_the_first_page_is_not_retried_but_reported():
    def call(**kw):
        raise ApiException(status=410, reason="Gone")
    with pytest.raises(KubeError) as e:
        lists.list_json(Conn, call, "Pod", "pods", resource_version="1",
                        resource_version_match="Exact")
    assert e.value.status == 410
