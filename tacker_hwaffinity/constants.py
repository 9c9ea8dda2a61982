"""Project-wide defaults. Each default lives here and nowhere else."""

# Node label that names the physical compute host a Kubernetes worker VM
# runs on. Tacker's reference Kubernetes MgmtDriver uses this key.
DEFAULT_HOST_LABEL = "CIS-node"
# the audit's host of a node without the host label: "node/<name>", a host of its own
UNLABELLED_HOST_PREFIX = "node/"

# The node label openstack-cloud-controller-manager sets, once, when a node registers:
# Nova's hostId of the node's server (sha224 of the project id and the compute host,
# 56 hex digits, seen by any project member; two projects see one host under two ids).
OPENSTACK_HOST_ID_LABEL = "topology.openstack.org/host-id"

# The node label the SCS standard scs-0214 requires to name the physical host; its
# implementation notes fill it with Nova's hostId, by hand.
SCS_HOST_ID_LABEL = "topology.scs.community/host-id"

# Pod annotation in which the node agent records each container's CPU grant. Only
# the agent may write it (the webhook and deploy/agent/numa-annotation-policy.yaml
# say so; the agent itself trusts no grant it could not have made).
NUMA_ANNOTATION = "hwaffinity.io/numa"

# The NoSchedule taint a worker node carries until its host label agrees with Nova: the
# kubelet registers with it (install_k8s.sh's join configuration), else the webhook adds it
# when the Node is created, else the controller as soon as it sees the node; the MgmtDriver
# and the controller lift it once they have labelled the node from Nova's answer. A pod that
# does not tolerate it is not bound to a node whose physical host is not known yet.
# doc/host-truth.md.
HOST_UNKNOWN_TAINT = "hwaffinity.io/host-unknown"

# kubeadm's taints of a control-plane node (``master`` before Kubernetes 1.24). Such a node
# runs no workload replicas: neither the webhook nor the controller gives it the taint above.
CONTROL_PLANE_TAINTS = ("node-role.kubernetes.io/control-plane",
                        "node-role.kubernetes.io/master")

# The field manager of every label this project applies (server-side apply, kubectl).
FIELD_MANAGER = "tacker-hwaffinity"

# The node label naming a node itself (the kubelet sets it).
HOSTNAME = "kubernetes.io/hostname"

# Pod phases after which a pod holds nothing on its node (kube-scheduler, the disruption
# controller and the kubelet count such pods as gone).
TERMINAL_PHASES = ("Succeeded", "Failed")

# The node agent's Kubernetes user: the ServiceAccount of deploy/agent/rbac.yaml.
DEFAULT_AGENT_SERVICE_ACCOUNT = "system:serviceaccount:hwaffinity-system:hwaffinity-agent"

# The extended resources that mark a pod for the scheduler extender, one per verb: the
# mutating webhook adds (1, to the first container's requests and limits) the filter's to a
# pod whose feasible nodes the extender can change and the score's to a pod whose scores it
# can change. deploy/webhook/scheduler-config.yaml has an extender entry per verb, each
# managing its resource (managedResources, ignoredByScheduler: true): kube-scheduler calls
# /filter and /prioritize only for the pods that need them, so a pod with preferred terms
# alone costs one call, not two. The kubelet drops them at admission because no node
# advertises them. EXTENDER_RESOURCE is the one mark of earlier webhooks: a third entry,
# with both verbs, manages it (kube-scheduler refuses a resource two entries manage), so
# the pods it marks still get both. doc/webhook.md, "Which pods reach the extender".
EXTENDER_FILTER_RESOURCE = "hwaffinity.io/extender-filter"
EXTENDER_SCORE_RESOURCE = "hwaffinity.io/extender-score"
EXTENDER_RESOURCE = "hwaffinity.io/extender"

# The scheduler a pod without spec.schedulerName gets (the API server defaults it).
DEFAULT_SCHEDULER = "default-scheduler"
