"""NRI, the container runtime's Node Resource Interface, spoken by the project itself.

``wire`` is a proto3 codec driven by schema tables; ``api`` holds the NRI
messages (``nri.pkg.api.v1alpha1``, the protocol containerd 1.7+ and CRI-O 1.26+
speak); ``ttrpc`` frames requests and responses; ``mux`` carries the two ttrpc
connections NRI multiplexes over the one unix socket; ``plugin`` is a plugin's
session: register, answer the runtime's requests, ask it for updates.
"""
