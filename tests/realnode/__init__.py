"""Real-node tests: a private containerd 1.7 with NRI, driven through the CRI like a kubelet."""
