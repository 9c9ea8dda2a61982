"""The node agent: applies a placement to the containers of its own node."""
