"""Client set-up: a kubeconfig file (and context) or the in-cluster service
account, bounded timeouts and retries, and one-line errors.

Every failure becomes :class:`KubeError`, whose message names the server or
the kubeconfig and says what to do; nothing here logs or prints credentials.
"""
import logging
import os
from typing import Any

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 60
RETRIES = 1            # urllib3 retries of a failed connection (not of HTTP errors)

LOG = logging.getLogger(__name__)


class KubeError(Exception):
    """The API server could not be used; the message is one line for the user.
    ``status`` is the HTTP status when the server answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Connection:
    """An ``ApiClient`` and where it points (for messages). The kubernetes client is
    untyped: its API objects are ``Any`` here, at the edge."""

    def __init__(self, api_client: Any, server: str, context: str | None = None) -> None:
        self.api_client = api_client
        self.server = server
        self.context = context

    @property
    def where(self) -> str:
        if self.context:
            return "%s (context %s)" % (self.server, self.context)
        return self.server

    def core(self) -> Any:
        from kubernetes import client
        return client.CoreV1Api(self.api_client)

    def apps(self) -> Any:
        from kubernetes import client
        return client.AppsV1Api(self.api_client)

    def batch(self) -> Any:
        from kubernetes import client
        return client.BatchV1Api(self.api_client)

    def policy(self) -> Any:
        from kubernetes import client
        return client.PolicyV1Api(self.api_client)

    def timeout(self) -> tuple[float, float]:
        return (CONNECT_TIMEOUT_S, READ_TIMEOUT_S)

    def close(self) -> None:
        try:
            self.api_client.close()
        except Exception as e:  # noqa: BLE001 - closing must not hide the result
            LOG.debug("API server %s: closing the client failed: %s: %s", self.where,
                      type(e).__name__, _first_line(e))


def _client_module() -> tuple[Any, Any]:
    try:
        from kubernetes import client, config
    except ImportError as e:
        raise KubeError("the 'kubernetes' Python client is not installed (%s): "
                        "pip install kubernetes" % e)
    return client, config


def connect(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """A :class:`Connection` from KUBECONFIG (and CONTEXT), or the in-cluster
    service account when KUBECONFIG is None. KUBECONFIG may list several files
    separated by ':' ($KUBECONFIG's form): they are merged as kubectl merges them,
    the first to set a value winning, and the missing ones are skipped."""
    client, config = _client_module()
    configuration = client.Configuration()
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as e:
            raise KubeError("not running in a cluster and no --kubeconfig given: %s" % e)
    else:
        _check_exists(kubeconfig)
        try:
            config.load_kube_config(config_file=kubeconfig, context=context,
                                    client_configuration=configuration,
                                    persist_config=False)
        except config.ConfigException as e:
            raise KubeError("kubeconfig %s: %s" % (kubeconfig, _first_line(e)))
        except Exception as e:  # noqa: BLE001 - malformed YAML, missing files, ...
            raise KubeError("kubeconfig %s: cannot be used (%s)"
                            % (kubeconfig, _described(e))) from None
        if context is None:
            try:
                _, active = config.list_kube_config_contexts(config_file=kubeconfig)
                context = active.get("name") if active else None
            except Exception as e:  # noqa: BLE001 - only used to name the context
                LOG.debug("kubeconfig %s: its current context not named: %s: %s", kubeconfig,
                          type(e).__name__, _first_line(e))
                context = None
    configuration.retries = RETRIES
    return Connection(client.ApiClient(configuration), _without_userinfo(configuration.host),
                      context)


def _check_exists(kubeconfig: str) -> None:
    """KubeError unless one file of KUBECONFIG (files separated by ':') exists."""
    if not any(os.path.isfile(p) for p in kubeconfig.split(os.pathsep) if p):
        raise KubeError("kubeconfig %s: no such file" % kubeconfig)


def context_namespace(kubeconfig: str, context: str | None = None) -> str | None:
    """The namespace CONTEXT (None: the current context) of KUBECONFIG names, which kubectl
    gives the objects of a manifest that name none; None when it names none."""
    _check_exists(kubeconfig)
    _, config = _client_module()
    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception as e:  # noqa: BLE001 - malformed YAML, no contexts, ...
        raise KubeError("kubeconfig %s: cannot be used (%s)"
                        % (kubeconfig, _described(e))) from None
    chosen = current if context is None else next(
        (c for c in contexts or () if isinstance(c, dict) and c.get("name") == context), None)
    if context is not None and chosen is None:
        raise KubeError("kubeconfig %s: no context %r" % (kubeconfig, context))
    settings = chosen.get("context") if isinstance(chosen, dict) else None
    namespace = settings.get("namespace") if isinstance(settings, dict) else None
    return namespace if isinstance(namespace, str) and namespace else None


def _without_userinfo(server: str) -> str:
    """SERVER as messages name it: its URL as urllib3 (the client's HTTP library) reads
    it, without a ``user:password@``."""
    from urllib3.util import parse_url
    from urllib3.exceptions import LocationParseError
    try:
        return parse_url(server)._replace(auth=None).url
    except LocationParseError:
        return "(an API server URL urllib3 cannot parse)"


def _described(e: BaseException) -> str:
    """E's type and first line; of a YAML error its type and place only (its text may
    quote a credential: ``redaction``)."""
    import yaml

    from tacker_hwaffinity.redaction import yaml_error
    if isinstance(e, yaml.YAMLError):
        return yaml_error(e)
    return "%s: %s" % (type(e).__name__, _first_line(e))


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
