"""The ``hwaffinity`` command line: thin entry points over the pure core."""
