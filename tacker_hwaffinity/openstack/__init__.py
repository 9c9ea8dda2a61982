"""OpenStack adapter: a keystone session from the VIM's access information,
and the two reads the driver needs (Heat resources, Nova servers)."""
from .api import OpenStack, OpenStackError
from .auth import access_from_tacker_v1, access_from_tacker_v2, access_from_environment, session

__all__ = ["OpenStack", "OpenStackError", "access_from_environment", "access_from_tacker_v1",
           "access_from_tacker_v2", "session"]
