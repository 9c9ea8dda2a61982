"""Counters a session keeps, for benchmarks and logs."""
from dataclasses import asdict, dataclass


@dataclass
class SessionStats:
    """Counters for benchmarks. CONNECTIONS counts authenticated transports
    (a jump host adds one per connection); RECONNECTS those made after a drop."""

    connect_attempts: int = 0
    connections: int = 0
    reconnects: int = 0
    commands: int = 0
    command_timeouts: int = 0
    connect_seconds: float = 0.0
    command_seconds: float = 0.0

    def as_dict(self):
        return asdict(self)
