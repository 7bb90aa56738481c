"""A real two-node Kubernetes cluster inside network namespaces this harness creates.

    python -m tests.e2e.cluster up --dir DIR      start it; print the kubeconfigs and audit log
    python -m tests.e2e.cluster status --dir DIR  what runs
    python -m tests.e2e.cluster down --dir DIR    stop what it started, by PID; remove the netns

Layout (addresses exist only inside the namespaces, so nothing here is ever dialled outside
them); the three share one link, a bridge in the client namespace:

    netns pte2e-node    eth0 10.123.0.10   etcd (127.0.0.1), kube-apiserver :6443,
                                           kube-controller-manager, kube-scheduler (127.0.0.1);
                                           Debian's containerd 1.6, kubelet v1.35.4 :10250,
                                           kube-proxy; bridge pte2e0 10.123.1.1 for its pods
    netns pte2e-node2   eth0 10.123.0.11   containerd 2 (built, with its runc shim), kubelet
                                           v1.37.2 :10250, kube-proxy; bridge pte2e1 10.123.2.1
    netns pte2e-client  br0  10.123.0.20   where probetui runs, so its probes reach a pod from
                                           another address than the kubelet's

The control plane runs the newer release (gomod137/go.mod), as the skew policy has it: a kubelet
may be older than the API server, never newer. Each node's pod subnet is routed to it from the
other node and the client. A kubelet dials a bridge pod from its bridge's address (10.123.1.1,
10.123.2.1) and a hostNetwork pod from its node's; the shadow (`--via direct` from the client
namespace) dials both from 10.123.0.20. The test apps log each probe's peer, so every attempt
can be told as the kubelet's or the shadow's.

Daemons are started with `nsenter --net=/run/netns/NAME` (`ip netns exec` remounts /sys and hides
the cgroup mounts runc needs). Each node's pods live under a cgroup of the node's own, below the
cluster's (cgroup v1, cgroupfs driver). The kube-scheduler places pods that name no node on
either node; the kube-controller-manager runs only the controllers the tests need (workloads:
DaemonSet, Deployment, ReplicaSet; service accounts and their tokens, kube-root-ca.crt,
EndpointSlices, garbage collection, namespaces, ClusterRole aggregation), without leader
election. `namespace()` returns once the controller has made the namespace's default service
account.

The `kubernetes` Service (10.123.128.1:443) is reached through kube-proxy's iptables rules in
each node namespace, as on a real node: OUTPUT for hostNetwork pods, PREROUTING for bridge pods,
so the in-cluster config the kubelet injects (KUBERNETES_SERVICE_HOST/PORT) works from any pod.
The kubelets authenticate by the API server's TokenReview and authorize by SubjectAccessReview
(webhook mode), so `nodes/metrics` and the rest are checked against RBAC; the API server's own
kubelet client is bound to `system:kubelet-api-admin`.

Each kubelet runs in a mount namespace of its own where the kernel tunables it would set
machine-wide (vm.overcommit_memory, kernel.panic, ...) are files of ours. `up` builds the agent
image (tests/e2e/pyimage.py) from the worktree and imports it into both nodes' containerd.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.e2e import build, pki, pyimage


@dataclass(frozen=True)
class Node:
    """One node: a network namespace of its own on the shared link, with its containerd,
    kubelet and kube-proxy, and a bridge for its pods."""

    name: str  # the Node object's name, and its network namespace's
    ip: str
    pod_subnet: str
    pod_gateway: str
    bridge: str
    link: str  # its veth's end in the client namespace, on the link's bridge
    kubelet: str  # the kubelet binary (tests/e2e/build.py GO_BINARIES)
    containerd: str | None  # the containerd binary built, or None for Debian's
    daemon_suffix: str  # "kubelet" + this names the node's daemon (its pid and log files)

    @property
    def ns(self) -> str:
        return self.name

    def daemon(self, what: str) -> str:
        return what + self.daemon_suffix


NODES = (
    Node(
        "pte2e-node",
        "10.123.0.10",
        "10.123.1.0/24",
        "10.123.1.1",
        "pte2e0",
        "node1",
        kubelet="kubelet-1.35",
        containerd=None,
        daemon_suffix="",
    ),
    Node(
        "pte2e-node2",
        "10.123.0.11",
        "10.123.2.0/24",
        "10.123.2.1",
        "pte2e1",
        "node2",
        kubelet="kubelet-1.37",
        containerd="containerd",
        daemon_suffix="-node2",
    ),
)
# the first node, where the control plane runs too
NODE = NODES[0]
NODE_NS = NODE.ns
NODE_NAME = NODE.name
NODE_IP = NODE.ip
POD_SUBNET = NODE.pod_subnet
POD_GATEWAY = NODE.pod_gateway
CLIENT_NS = "pte2e-client"
CLIENT_IP = "10.123.0.20"
LINK_BRIDGE = "br0"
NAMESPACES = (*(n.ns for n in NODES), CLIENT_NS)
SERVICE_RANGE = "10.123.128.0/24"
# the `kubernetes` Service's ClusterIP: the range's first address
SERVICE_IP = "10.123.128.1"
APISERVER = f"https://{NODE_IP}:6443"
VIEW_USER = "probetui-viewer"
APISERVER_KUBELET_USER = "kube-apiserver-kubelet-client"
# in the order `up` starts them; `down` stops them in the reverse
DAEMONS = (
    "etcd",
    *(n.daemon("containerd") for n in NODES),
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    *(n.daemon("kubelet") for n in NODES),
    *(n.daemon("kube-proxy") for n in NODES),
)
# what the kube-controller-manager runs (by the aliases of its --controllers flag)
CONTROLLERS = (
    "daemonset",
    "replicaset",
    "deployment",
    "serviceaccount",
    "serviceaccount-token",
    "root-ca-cert-publisher",
    "endpointslice",
    "garbagecollector",
    "namespace",
    "clusterrole-aggregation",
)

# the values the kubelet wants (container_manager_linux.go setupKernelTunables): given as files
# over /proc/sys in its own mount namespace, it finds them set and writes nothing machine-wide
_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}


class ClusterError(Exception):
    """The cluster could not be brought up or down; the message names the step."""


def _run(*argv: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, input=input)


def in_ns(ns: str, *argv: str) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{ns}", "--", *argv]


def netns_exists(ns: str) -> bool:
    return Path(f"/run/netns/{ns}").exists()


def node_cgroup_root(dir: Path, node: Node) -> str:
    """The cgroup a node's kubelet puts its pods under (its cgroupRoot), one per node: two
    kubelets under one root would each take the other's pod cgroups for orphans of its own."""
    return f"{own_cgroup_root(dir)}/{node.name}"


def own_cgroup_root(dir: Path) -> str:
    """Under the deepest cgroup this process is in, so the cluster's cgroups nest under ours;
    named after the cluster's directory, so a `down` ends only its own cluster's processes."""
    paths = [
        line.split(":", 2)[2]
        for line in Path("/proc/self/cgroup").read_text().splitlines()
        if line.split(":", 2)[1]
    ]
    return max(paths, key=len).rstrip("/") + f"/pte2e-{dir.name}"


LOCK = Path("/run/probetui-e2e.lock")


class Busy(Exception):
    """Another test cluster runs on this machine (the namespaces and addresses are fixed)."""


def lock() -> int:
    """Hold the machine's one test-cluster lock for as long as this process lives."""
    fd = os.open(LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = LOCK.read_text().strip() or "another process"
        raise Busy(f"another e2e test cluster runs on this machine ({holder})") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()}\n".encode())
    return fd


def _cgroup_hierarchies() -> list[Path]:
    root = Path("/sys/fs/cgroup")
    return [p for p in sorted(root.iterdir()) if p.is_dir() and p.name != "unified"]


def unavailable_reason() -> str | None:
    """Why this machine cannot run the test cluster, or None when it can."""
    if os.geteuid() != 0:
        return "the test cluster needs root (network namespaces, containerd, cgroups)"
    for tool in ("nsenter", "unshare", "ip", "go", "gcc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not Path("/sys/fs/cgroup/memory").is_dir():
        return "no cgroup v1 memory hierarchy under /sys/fs/cgroup"
    return None


@dataclass
class Paths:
    dir: Path

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def pids(self) -> Path:
        return self.dir / "pids"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def view_kubeconfig(self) -> Path:
        return self.dir / "view.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.dir / "audit.log"

    def node(self, node: Node) -> Path:
        """A node's own directory: its containerd, kubelet, CNI configuration and pod logs."""
        return self.dir / "nodes" / node.name

    def containerd_sock(self, node: Node) -> Path:
        return self.node(node) / "containerd" / "containerd.sock"

    def runc_root(self, node: Node) -> Path:
        return self.node(node) / "runc"

    def pod_logs(self, node: Node) -> Path:
        return self.node(node) / "pod-logs"

    def cni(self, node: Node) -> Path:
        return self.node(node) / "cni"

    @property
    def state(self) -> Path:
        return self.dir / "state.json"


class Cluster:
    def __init__(self, dir: Path) -> None:
        self.paths = Paths(dir.resolve())
        self.bin: Path | None = None
        self.agent_image: str | None = None
        # what each Node says its kubelet is (status.nodeInfo.kubeletVersion), and the API
        # server's own version, once `up` has them
        self.kubelet_versions: dict[str, str] = {}
        self.control_plane_version: str | None = None
        self._children: dict[str, subprocess.Popen] = {}
        self._lock: int | None = None

    # ---------------------------------------------------------------- bring up

    def up(self) -> None:
        reason = unavailable_reason()
        if reason:
            raise build.Unavailable(reason)
        self._lock = lock()
        build.install_packages()
        top = build.ensure_built()
        self.bin = top / "bin"
        p = self.paths
        for d in (p.dir, p.logs, p.pids, p.pki, *(p.pod_logs(n) for n in NODES)):
            d.mkdir(parents=True, exist_ok=True)
        if self.running():
            raise ClusterError(f"a test cluster already runs from {p.dir} (down it first)")
        clear_stale_network(NAMESPACES)
        _unmount_stale_clusters(p.dir.parent)
        try:
            self.agent_image, agent_tar = pyimage.agent_image(p.dir / "agent-image")
        except pyimage.BuildError as e:
            raise ClusterError(f"the agent image: {e}") from None
        self._network()
        self._certificates()
        self._cgroups()
        self._start_etcd()
        for node in NODES:
            self._start_containerd(node)
        self._import_images([*sorted((top / "images").glob("*.tar")), agent_tar])
        self._start_apiserver()
        self._bootstrap_objects()
        self._start_controller_manager()
        self._start_scheduler()
        for node in NODES:
            self._start_kubelet(node)
        for node in NODES:
            self._start_kube_proxy(node)
        self._wait_nodes_ready()
        self._untaint_nodes()
        self._wait_service_rules()
        self._wait_cluster_roles_aggregated()
        self.namespace("default")
        self.control_plane_version = json.loads(self.kubectl("version", "-o", "json"))[
            "serverVersion"
        ]["gitVersion"]
        p.state.write_text(
            json.dumps(
                {
                    "bin": str(self.bin),
                    "cgroup": own_cgroup_root(self.paths.dir),
                    "ns": list(NAMESPACES),
                }
            )
        )

    def _network(self) -> None:
        for ns in NAMESPACES:
            if not netns_exists(ns):
                _run("ip", "netns", "add", ns)
        client = ["ip", "-n", CLIENT_NS]
        # the link every namespace is on: a bridge in the client namespace, which holds the
        # client's address; nothing touches the root namespace's links
        if _run(*client, "link", "show", LINK_BRIDGE, check=False).returncode != 0:
            _run(*client, "link", "add", LINK_BRIDGE, "type", "bridge")
            _run(*client, "addr", "add", f"{CLIENT_IP}/24", "dev", LINK_BRIDGE)
        _run(*client, "link", "set", "lo", "up")
        _run(*client, "link", "set", LINK_BRIDGE, "up")
        for node in NODES:
            ns = ["ip", "-n", node.ns]
            if _run(*ns, "link", "show", "eth0", check=False).returncode != 0:
                # both ends made inside the node namespace, then one moved to the bridge
                _run(*ns, "link", "add", "eth0", "type", "veth", "peer", "name", node.link)
                _run(*ns, "link", "set", node.link, "netns", CLIENT_NS)
                _run(*client, "link", "set", node.link, "master", LINK_BRIDGE)
                _run(*ns, "addr", "add", f"{node.ip}/24", "dev", "eth0")
            _run(*ns, "link", "set", "lo", "up")
            _run(*ns, "link", "set", "eth0", "up")
            _run(*client, "link", "set", node.link, "up")
            _run(*client, "route", "replace", node.pod_subnet, "via", node.ip)
            for other in NODES:
                if other != node:
                    _run(*ns, "route", "replace", other.pod_subnet, "via", other.ip)
            # a route to the Service range, so a hostNetwork pod's connect() to a ClusterIP
            # gets as far as kube-proxy's OUTPUT rules (no route: ENETUNREACH before any rule)
            _run(*ns, "route", "replace", SERVICE_RANGE, "dev", "eth0")
            _run(*in_ns(node.ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"))
            self._cni_config(node)

    def _cni_config(self, node: Node) -> None:
        conf = self.paths.cni(node) / "net.d"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "10-pte2e.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": "pte2e",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": node.bridge,
                            "isGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [
                                    [{"subnet": node.pod_subnet, "gateway": node.pod_gateway}]
                                ],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(self.paths.cni(node) / "ipam"),
                            },
                        },
                        {"type": "portmap", "capabilities": {"portMappings": True}},
                    ],
                },
                indent=1,
            )
        )

    def _certificates(self) -> None:
        ca = pki.Authority(self.paths.pki)
        self.ca = ca.pair.cert
        self.apiserver_pair = ca.issue(
            "apiserver",
            "kube-apiserver",
            ips=(NODE_IP, SERVICE_IP, "127.0.0.1"),
            dns=("kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost"),
            server=True,
        )
        # no system:masters: the kubelet asks the API server whether this user may (webhook
        # authorization), and a binding to system:kubelet-api-admin says yes
        self.apiserver_kubelet_pair = ca.issue(
            "apiserver-kubelet-client", APISERVER_KUBELET_USER, client=True
        )
        # each kubelet serves as its node and calls the API server as `system:node:NAME`,
        # the identity the Node authorizer and NodeRestriction hold it to
        self.kubelet_serving: dict[str, pki.Pair] = {}
        for node in NODES:
            self.kubelet_serving[node.name] = ca.issue(
                f"kubelet-{node.name}", node.name, ips=(node.ip,), dns=(node.name,), server=True
            )
            client = ca.issue(
                f"kubelet-client-{node.name}",
                f"system:node:{node.name}",
                orgs=("system:nodes",),
                client=True,
            )
            self._kubeconfig(self.kubelet_kubeconfig(node), "kubelet", client)
        admin = ca.issue("admin", "probetui-e2e-admin", orgs=("system:masters",), client=True)
        viewer = ca.issue("viewer", VIEW_USER, client=True)
        self.sa_key = pki.service_account_key(self.paths.pki / "sa.key")
        self._kubeconfig(self.paths.admin_kubeconfig, "admin", admin)
        self._kubeconfig(self.paths.view_kubeconfig, VIEW_USER, viewer)
        # the control plane's own users, each with the bootstrap RBAC its name is bound to
        for name, cn in (
            ("kube-controller-manager", "system:kube-controller-manager"),
            ("kube-scheduler", "system:kube-scheduler"),
            ("kube-proxy", "system:kube-proxy"),
        ):
            self._kubeconfig(self.component_kubeconfig(name), name, ca.issue(name, cn, client=True))

    def component_kubeconfig(self, name: str) -> Path:
        return self.paths.dir / f"{name}.kubeconfig"

    def kubelet_kubeconfig(self, node: Node) -> Path:
        return self.paths.node(node) / "kubelet.kubeconfig"

    def _kubeconfig(self, path: Path, user: str, pair: pki.Pair) -> None:
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "pte2e",
                    "cluster": {"server": APISERVER, "certificate-authority": str(self.ca)},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate": str(pair.cert), "client-key": str(pair.key)},
                }
            ],
            "contexts": [
                {
                    "name": f"pte2e-{user}",
                    "context": {"cluster": "pte2e", "user": user, "namespace": "default"},
                }
            ],
            "current-context": f"pte2e-{user}",
        }
        path.write_text(json.dumps(doc, indent=1))

    def _cgroups(self) -> None:
        for root in (node_cgroup_root(self.paths.dir, n) for n in NODES):
            rel = root.lstrip("/")
            for h in _cgroup_hierarchies():
                d = h / rel
                if d.is_dir():
                    continue
                d.mkdir(parents=True, exist_ok=True)
                if h.name == "cpuset":
                    # a new cpuset has no CPUs or memory nodes until given its parent's
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        for parent in reversed(list(d.relative_to(h).parents)[:-1]):
                            pd = h / parent
                            if not (pd / f).read_text().strip():
                                (pd / f).write_text((pd.parent / f).read_text())
                        (d / f).write_text(d.parent.joinpath(f).read_text())

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.paths.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._children[name] = proc
        (self.paths.pids / f"{name}.pid").write_text(f"{proc.pid}\n")

    def _wait(self, what: str, check, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self._children.items():
                if proc.poll() is not None:
                    tail = (self.paths.logs / f"{name}.log").read_text(errors="replace")[-2000:]
                    raise ClusterError(
                        f"{name} exited with {proc.returncode} while waiting for {what}:\n{tail}"
                    )
            if check():
                return
            time.sleep(0.2)
        raise ClusterError(
            f"timed out after {timeout:.0f} s waiting for {what} (logs in {self.paths.logs})"
        )

    def _ok(self, *argv: str) -> bool:
        return subprocess.run(argv, capture_output=True).returncode == 0

    def _start_etcd(self) -> None:
        assert self.bin
        data = self.paths.dir / "etcd"
        self._spawn(
            "etcd",
            in_ns(
                NODE_NS,
                str(self.bin / "etcd"),
                "--name=pte2e",
                f"--data-dir={data}",
                "--listen-client-urls=http://127.0.0.1:2379",
                "--advertise-client-urls=http://127.0.0.1:2379",
                "--listen-peer-urls=http://127.0.0.1:2380",
                "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                "--initial-cluster=pte2e=http://127.0.0.1:2380",
                "--log-level=warn",
            ),
        )
        self._wait(
            "etcd", lambda: self._ok(*in_ns(NODE_NS, "curl", "-sf", "http://127.0.0.1:2379/health"))
        )

    def _start_containerd(self, node: Node) -> None:
        d = self.paths.node(node) / "containerd"
        d.mkdir(parents=True, exist_ok=True)
        config = d / "config.toml"
        if node.containerd is None:
            binary = "containerd"
            config.write_text(self._containerd_1_config(node, d))
        else:
            assert self.bin
            binary = str(self.bin / node.containerd)
            config.write_text(self._containerd_2_config(node, d))
        sock = self.paths.containerd_sock(node)
        self._spawn(node.daemon("containerd"), in_ns(node.ns, binary, "--config", str(config)))
        self._wait(
            f"{node.daemon('containerd')}", lambda: self._ok("ctr", "-a", str(sock), "version")
        )

    def _containerd_1_config(self, node: Node, d: Path) -> str:
        """Debian's containerd 1.6: the CRI plugin's config of version 2."""
        return f"""version = 2
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.paths.containerd_sock(node)}"
[ttrpc]
  address = "{self.paths.containerd_sock(node)}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{build.IMAGES["pause"]}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{self.paths.cni(node) / "net.d"}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{self.paths.runc_root(node)}"
"""

    def _containerd_2_config(self, node: Node, d: Path) -> str:
        """containerd 2: config version 3, where the CRI plugin is split into its images and
        runtime parts. The shim is named by path: on PATH is Debian's 1.6 one."""
        assert self.bin
        return f"""version = 3
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs"]
[grpc]
  address = "{self.paths.containerd_sock(node)}"
[ttrpc]
  address = "{self.paths.containerd_sock(node)}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{build.IMAGES["pause"]}"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "{self.paths.cni(node) / "net.d"}"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "{self.bin / "containerd-shim-runc-v2"}"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{self.paths.runc_root(node)}"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""

    def _import_images(self, tars: list[Path]) -> None:
        """Every image into every node's containerd: one at a time into each (imports side by
        side into one containerd contend for the same content refs), the nodes side by side."""

        def into(node: Node) -> list[str]:
            for tar in tars:
                sock = str(self.paths.containerd_sock(node))
                r = _run(
                    "ctr", "-a", sock, "-n", "k8s.io", "images", "import", str(tar), check=False
                )
                if r.returncode != 0:
                    return [f"ctr images import {tar.name} into {node.name}: {r.stderr.strip()}"]
            return []

        with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
            failed = [f for errors in pool.map(into, NODES) for f in errors]
        if failed:
            raise ClusterError("; ".join(failed))

    def _start_apiserver(self) -> None:
        assert self.bin
        policy = self.paths.dir / "audit-policy.yaml"
        policy.write_text(
            json.dumps(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "rules": [{"level": "Metadata"}],
                }
            )
        )
        pk = self.paths.pki
        self._spawn(
            "kube-apiserver",
            in_ns(
                NODE_NS,
                str(self.bin / "kube-apiserver"),
                "--etcd-servers=http://127.0.0.1:2379",
                f"--bind-address={NODE_IP}",
                f"--advertise-address={NODE_IP}",
                "--secure-port=6443",
                f"--tls-cert-file={self.apiserver_pair.cert}",
                f"--tls-private-key-file={self.apiserver_pair.key}",
                f"--client-ca-file={self.ca}",
                f"--kubelet-client-certificate={self.apiserver_kubelet_pair.cert}",
                f"--kubelet-client-key={self.apiserver_kubelet_pair.key}",
                f"--kubelet-certificate-authority={self.ca}",
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={self.sa_key}",
                f"--service-account-signing-key-file={self.sa_key}",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.paths.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                f"--cert-dir={pk}",
                "--allow-privileged=true",
                "--profiling=false",
            ),
        )
        self._wait(
            "kube-apiserver /readyz",
            lambda: self._ok(*self.kubectl_argv("get", "--raw", "/readyz")),
            90,
        )

    def kubectl_argv(self, *args: str, kubeconfig: Path | None = None) -> list[str]:
        assert self.bin
        cfg = kubeconfig or self.paths.admin_kubeconfig
        return in_ns(CLIENT_NS, str(self.bin / "kubectl"), f"--kubeconfig={cfg}", *args)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        r = subprocess.run(self.kubectl_argv(*args), capture_output=True, text=True, input=input)
        if check and r.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def apply(self, doc: dict | list) -> None:
        docs = doc if isinstance(doc, list) else [doc]
        self.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}),
        )

    def _bootstrap_objects(self) -> None:
        self.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": VIEW_USER},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "view",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": VIEW_USER}
                ],
            }
        )
        # what kubeadm binds: the API server's calls to the kubelet (logs, exec, port-forward,
        # proxy) pass the kubelet's webhook authorization
        self.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "kube-apiserver-kubelet-api-admin"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "system:kubelet-api-admin",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": APISERVER_KUBELET_USER,
                    }
                ],
            }
        )

    def _wait_cluster_roles_aggregated(self) -> None:
        """Until the clusterrole-aggregation controller has filled `view` (empty until the
        rules of the roles labelled to aggregate into it are copied in)."""

        def filled() -> bool:
            out = subprocess.run(
                self.kubectl_argv("get", "clusterrole", "view", "-o", "json"),
                capture_output=True,
                text=True,
            )
            return out.returncode == 0 and bool(json.loads(out.stdout).get("rules"))

        self._wait("ClusterRole view aggregated", filled, 60)

    def _control_plane_flags(self, name: str) -> list[str]:
        # no --authentication-kubeconfig: nothing calls these daemons' own ports, and the
        # lookup of the API server's request-header CA (none here) would log errors forever
        return [
            f"--kubeconfig={self.component_kubeconfig(name)}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--cert-dir={self.paths.dir / name}",
        ]

    def _start_controller_manager(self) -> None:
        assert self.bin
        self._spawn(
            "kube-controller-manager",
            in_ns(
                NODE_NS,
                str(self.bin / "kube-controller-manager"),
                *self._control_plane_flags("kube-controller-manager"),
                f"--controllers={','.join(CONTROLLERS)}",
                # each controller under a service account of its own, as kubeadm runs it
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.sa_key}",
                f"--root-ca-file={self.ca}",
                f"--service-cluster-ip-range={SERVICE_RANGE}",
                "--secure-port=10257",
                "--v=1",
            ),
        )

    def _start_scheduler(self) -> None:
        assert self.bin
        self._spawn(
            "kube-scheduler",
            in_ns(
                NODE_NS,
                str(self.bin / "kube-scheduler"),
                *self._control_plane_flags("kube-scheduler"),
                "--secure-port=10259",
                "--v=1",
            ),
        )

    def _start_kube_proxy(self, node: Node) -> None:
        assert self.bin
        self._spawn(
            node.daemon("kube-proxy"),
            in_ns(
                node.ns,
                str(self.bin / "kube-proxy"),
                f"--kubeconfig={self.component_kubeconfig('kube-proxy')}",
                f"--hostname-override={node.name}",
                "--proxy-mode=iptables",
                # the node's own pods: what reaches its rules from a pod comes from there
                f"--cluster-cidr={node.pod_subnet}",
                # 0: leave the conntrack table's size and timeouts as they are; they are the
                # machine's, not the node namespace's
                "--conntrack-max-per-core=0",
                "--conntrack-tcp-timeout-established=0",
                "--conntrack-tcp-timeout-close-wait=0",
                "--metrics-bind-address=127.0.0.1:10249",
                "--healthz-bind-address=127.0.0.1:10256",
                "--v=1",
            ),
        )

    def _wait_service_rules(self) -> None:
        """Until each node's kube-proxy has written the `kubernetes` Service's rules."""
        for node in NODES:

            def written(node: Node = node) -> bool:
                r = subprocess.run(
                    in_ns(node.ns, "iptables-save", "-t", "nat"), capture_output=True, text=True
                )
                return f"-d {SERVICE_IP}/32" in r.stdout

            self._wait(f"kube-proxy's rules for {SERVICE_IP} on {node.name}", written, 60)

    def namespace(self, name: str) -> None:
        """A namespace, returned once the controller-manager has made its default service
        account: until then the API server's ServiceAccount admission turns pods away."""
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._wait(
            f"the default service account of {name}",
            lambda: self._ok(*self.kubectl_argv("-n", name, "get", "serviceaccount", "default")),
            30,
        )

    def _start_kubelet(self, node: Node) -> None:
        assert self.bin
        d = self.paths.node(node) / "kubelet"
        (d / "root").mkdir(parents=True, exist_ok=True)
        tun = d / "tunables"
        tun.mkdir(exist_ok=True)
        binds = []
        for i, (path, value) in enumerate(_TUNABLES.items()):
            f = tun / str(i)
            f.write_text(value + "\n")
            binds.append(f"mount --bind {f} /proc/sys/{path}")
        config = d / "config.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    "address": node.ip,
                    "port": 10250,
                    "readOnlyPort": 0,
                    "healthzBindAddress": "127.0.0.1",
                    "healthzPort": 10248,
                    # bearer tokens checked by TokenReview and every request by a
                    # SubjectAccessReview, as on a real node: nodes/metrics means something
                    "authentication": {
                        "anonymous": {"enabled": False},
                        "webhook": {"enabled": True},
                        "x509": {"clientCAFile": str(self.ca)},
                    },
                    "authorization": {"mode": "Webhook"},
                    "tlsCertFile": str(self.kubelet_serving[node.name].cert),
                    "tlsPrivateKeyFile": str(self.kubelet_serving[node.name].key),
                    "cgroupDriver": "cgroupfs",
                    "failCgroupV1": False,
                    "cgroupRoot": node_cgroup_root(self.paths.dir, node),
                    "cgroupsPerQOS": True,
                    "enforceNodeAllocatable": [],
                    "containerRuntimeEndpoint": f"unix://{self.paths.containerd_sock(node)}",
                    "failSwapOn": False,
                    "protectKernelDefaults": False,
                    "podLogsDir": str(self.paths.pod_logs(node)),
                    "resolvConf": "/etc/resolv.conf",
                    "evictionHard": {
                        "memory.available": "100Mi",
                        "nodefs.available": "1%",
                        "imagefs.available": "1%",
                        "nodefs.inodesFree": "1%",
                    },
                    "imageGCHighThresholdPercent": 100,
                    "imageGCLowThresholdPercent": 99,
                    "nodeStatusUpdateFrequency": "5s",
                    "serializeImagePulls": False,
                },
                indent=1,
            )
        )
        kubelet = " ".join(
            [
                str(self.bin / node.kubelet),
                f"--config={config}",
                f"--kubeconfig={self.kubelet_kubeconfig(node)}",
                f"--root-dir={d / 'root'}",
                f"--hostname-override={node.name}",
                f"--node-ip={node.ip}",
                f"--cert-dir={d / 'pki'}",
                "--v=2",
            ]
        )
        # the volumes the kubelet mounts (the service-account token's tmpfs) must reach
        # containerd, which runs outside the kubelet's mount namespace: its root directory is a
        # shared mount the namespace's copy is a peer of; /proc, where the tunables are bound,
        # is made a slave first so nothing bound there reaches the machine
        _shared_mount(d / "root")
        script = " && ".join(["mount --make-rslave /proc", *binds, f"exec {kubelet}"])
        self._spawn(
            node.daemon("kubelet"),
            in_ns(node.ns, "unshare", "--mount", "--propagation", "unchanged", "sh", "-c", script),
        )

    def _wait_nodes_ready(self) -> None:
        for node in NODES:

            def ready(node: Node = node) -> bool:
                out = subprocess.run(
                    self.kubectl_argv("get", "node", node.name, "-o", "json"),
                    capture_output=True,
                    text=True,
                )
                if out.returncode != 0:
                    return False
                status = json.loads(out.stdout).get("status", {})
                conds = status.get("conditions", [])
                version = status.get("nodeInfo", {}).get("kubeletVersion")
                if version:
                    self.kubelet_versions[node.name] = version
                return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

            self._wait(f"node {node.name} Ready", ready, 120)

    def _untaint_nodes(self) -> None:
        """What the node-lifecycle controller does once a node is Ready: lift the not-ready
        taint the API server's TaintNodesByCondition admission put on the new Node, without
        which nothing is scheduled there (a DaemonSet's pods tolerate only its NoExecute kin).
        The controller itself is not run: past its grace period with a kubelet stopped it
        would mark every pod not ready, a verdict the kubelet never made."""
        for node in NODES:
            self.kubectl("taint", "node", node.name, "node.kubernetes.io/not-ready:NoSchedule-")

    @property
    def kubelet_version(self) -> str | None:
        """The first node's kubelet's version (`kubelet_versions` has every node's)."""
        return self.kubelet_versions.get(NODE_NAME)

    def wait_running(self, ns: str, timeout: float = 60.0) -> None:
        """Until every pod of the namespace has all its containers running."""

        def running() -> bool:
            pods = json.loads(self.kubectl("-n", ns, "get", "pods", "-o", "json"))["items"]
            return bool(pods) and all(
                s.get("state", {}).get("running")
                for p in pods
                for s in p.get("status", {}).get("containerStatuses", []) or [{}]
            )

        self._wait(f"the pods of {ns} running", running, timeout)

    def workdir(self, name: str) -> Path:
        """A directory of the cluster's own for a test's files (kept with the cluster's logs)."""
        d = self.paths.dir / "runs" / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    # ---------------------------------------------------------------- faults

    def stop_daemon(self, name: str) -> None:
        pid = self._pid(name)
        if pid is not None:
            _kill_group(pid)
        self._children.pop(name, None)

    def restart(self, name: str) -> None:
        """Stop and start one daemon by its name in DAEMONS ("kubelet" is the first node's,
        "kubelet-node2" the second's)."""
        self.stop_daemon(name)
        start: dict[str, Callable[[], None]] = {
            "kube-apiserver": self._start_apiserver,
            "kube-controller-manager": self._start_controller_manager,
            "kube-scheduler": self._start_scheduler,
            "etcd": self._start_etcd,
        }
        for node in NODES:
            start[node.daemon("kubelet")] = functools.partial(self._start_kubelet, node)
            start[node.daemon("kube-proxy")] = functools.partial(self._start_kube_proxy, node)
            start[node.daemon("containerd")] = functools.partial(self._start_containerd, node)
        start[name]()

    # ---------------------------------------------------------------- status, down

    def _pid(self, name: str) -> int | None:
        f = self.paths.pids / f"{name}.pid"
        if not f.exists():
            return None
        pid = int(f.read_text())
        return pid if _alive(pid) else None

    def running(self) -> dict[str, int]:
        return {n: pid for n in DAEMONS if (pid := self._pid(n)) is not None}

    def down(self) -> list[str]:
        """Stop everything this cluster started; return what needed force."""
        notes: list[str] = []
        if self._lock is None and self._pid("etcd") is None:
            # not ours to end: the namespaces and addresses are shared by whichever cluster runs
            try:
                self._lock = lock()
            except Busy as e:
                raise ClusterError(
                    f"{e}; {self.paths.dir} is not it, so nothing was stopped"
                ) from None
        state = json.loads(self.paths.state.read_text()) if self.paths.state.exists() else {}
        for name in reversed(DAEMONS):
            pid = self._pid(name)
            if pid is not None:
                _kill_group(pid)
            proc = self._children.pop(name, None)
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
        # the containers' processes outlive their shims: end them through their cgroups
        cg = state.get("cgroup", own_cgroup_root(self.paths.dir)).lstrip("/")
        killed = _kill_cgroup_tree(cg)
        if killed:
            notes.append(f"killed {killed} container processes left in cgroup {cg}")
        # containerd's shims for this cluster's sockets
        for node in NODES:
            for pid in _pids_with_arg(str(self.paths.containerd_sock(node))):
                _kill_group(pid)
        _unmount_under(self.paths.dir)
        remove_network(NAMESPACES)
        _remove_cgroup_tree(cg)
        for f in self.paths.pids.glob("*.pid"):
            f.unlink()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        return notes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_group(pid: int, grace: float = 5.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _pids_with_arg(arg: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv or any(a.startswith(arg.encode()) for a in argv):
            out.append(int(d.name))
    return out


def _kill_cgroup_tree(rel: str) -> int:
    killed = 0
    for h in _cgroup_hierarchies():
        root = h / rel
        if not root.is_dir():
            continue
        for procs in root.rglob("cgroup.procs"):
            for line in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(line), signal.SIGKILL)
                    killed += 1
    return killed


def _remove_cgroup_tree(rel: str) -> None:
    for h in _cgroup_hierarchies():
        root = h / rel
        if not root.is_dir():
            continue
        for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()


def _mount_points() -> set[str]:
    return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}


def _shared_mount(path: Path) -> None:
    """Make `path` a mount point of its own with shared propagation (once: a restart finds it)."""
    if str(path) not in _mount_points():
        _run("mount", "--bind", str(path), str(path))
    _run("mount", "--make-shared", str(path))


def _unmount_under(top: Path) -> None:
    mounts = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(str(top) + "/")
    ]
    for m in sorted(set(mounts), key=len, reverse=True):
        _run("umount", "-l", m, check=False)


def _netns_inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _pids_in_netns(inodes: set[int]) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and _netns_inode(d / "ns" / "net") in inodes:
            out.append(int(d.name))
    return out


def clear_stale_network(
    namespaces: Sequence[str], sandboxes: str = "cni-*", min_age: float = 60.0
) -> list[str]:
    """Remove what a cluster killed without its `down` left: its nodes' and client's namespaces,
    and the pod sandboxes' namespaces whose veths hang on its bridges. `_network` would reuse a
    node namespace it finds, so the dead sandboxes would stay on the bridge with the same
    addresses the fresh IPAM hands out again, and a dial to a new pod's IP would meet the old
    sandbox (no listener there: connection refused) while port-forward, which enters the right
    namespace, works. Namespaces that processes still run in are another cluster's: Busy."""
    present = [ns for ns in namespaces if netns_exists(ns)]
    inodes = {i for ns in present if (i := _netns_inode(Path(f"/run/netns/{ns}"))) is not None}
    holders = _pids_in_netns(inodes)
    if holders:
        raise Busy(
            f"processes {', '.join(map(str, holders[:5]))} still run in netns "
            f"{'/'.join(present)}: another e2e test cluster (end it with "
            "`python -m tests.e2e.cluster down --dir DIR`)"
        )
    return remove_network(namespaces, sandboxes, min_age)


def remove_network(
    namespaces: Sequence[str], sandboxes: str = "cni-*", min_age: float = 60.0
) -> list[str]:
    """Delete the nodes' and client's namespaces and every sandbox namespace a veth of theirs
    leads to (found before a node namespace goes: the kernel drops the veths only after its
    last reference, so a sandbox still has its eth0 for a moment after), ending what still
    runs in the sandboxes; and the `lo`-only sandboxes earlier runs left behind."""
    present = [ns for ns in namespaces if netns_exists(ns)]
    attached: set[str] = set()
    for ns in present:
        attached |= _peer_namespaces(ns)
    attached -= set(present)
    # a container's process can outlive its shim and the daemons: it is ours, on our bridge
    orphans = {i for ns in attached if (i := _netns_inode(Path(f"/run/netns/{ns}"))) is not None}
    for pid in _pids_in_netns(orphans):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    removed: list[str] = []
    for ns in [*present, *sorted(attached)]:
        _run("ip", "netns", "delete", ns, check=False)
        removed.append(ns)
    # and the sandboxes earlier killed runs left with nothing but `lo`: clutter, no harm
    now = time.time()
    for ns_file in sorted(Path("/run/netns").glob(sandboxes)):
        with contextlib.suppress(OSError):
            if now - ns_file.stat().st_mtime >= min_age and _netns_of_ours(ns_file):
                _run("ip", "netns", "delete", ns_file.name, check=False)
                removed.append(ns_file.name)
    return removed


def _peer_namespaces(ns: str) -> set[str]:
    """The named namespaces the other ends of this namespace's veths are in."""
    ids = _run("ip", "-n", ns, "-j", "netns", "list-id", check=False)
    links = _run("ip", "-n", ns, "-j", "link", "show", check=False)
    if ids.returncode or links.returncode:
        return set()
    names = {e["nsid"]: e.get("name") for e in json.loads(ids.stdout or "[]")}
    return {
        name
        for link in json.loads(links.stdout or "[]")
        if (name := names.get(link.get("link_netnsid"))) is not None
    }


def _unmount_stale_clusters(top: Path) -> None:
    """Mounts (containerd's rootfs, the kubelet's volumes) under the directories of clusters
    whose daemons are all gone."""
    for state in top.glob("pte2e-*/state.json"):
        c = Cluster(state.parent)
        if not c.running():
            _unmount_under(state.parent)


def _netns_of_ours(ns_file: Path) -> bool:
    """A sandbox namespace of this cluster has its veth's other end on our bridge, which is
    gone once the node namespace is: such a namespace has only `lo` left, or nothing up."""
    r = _run("ip", "-n", ns_file.name, "-j", "link", "show", check=False)
    if r.returncode != 0:
        return False
    links = json.loads(r.stdout or "[]")
    return all(link.get("ifname") == "lo" for link in links)


def kubelets_line(versions: dict[str, str]) -> str:
    """Each node's kubelet version, in node order: `v1.35.4 (pte2e-node), v1.37.2 (...)`."""
    return ", ".join(f"{versions.get(n.name, '?')} ({n.name})" for n in NODES)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.e2e.cluster", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument(
        "--dir", required=True, type=Path, help="where the cluster keeps its state and logs"
    )
    args = p.parse_args(argv)
    c = Cluster(args.dir)
    try:
        if args.action == "up":
            t0 = time.monotonic()
            c.up()
            print(f"up in {time.monotonic() - t0:.1f} s")
            print(f"control plane:     {c.control_plane_version}")
            print(f"kubelet:           {kubelets_line(c.kubelet_versions)}")
            print(f"agent image:       {c.agent_image}")
            print(f"admin kubeconfig:  {c.paths.admin_kubeconfig}")
            print(
                f"view kubeconfig:   {c.paths.view_kubeconfig}  (user {VIEW_USER}, ClusterRole view)"
            )
            print(f"audit log:         {c.paths.audit_log}")
            print(f"kubectl:           {' '.join(c.kubectl_argv())}")
            print(f"a shell beside probetui: nsenter --net=/run/netns/{CLIENT_NS} bash")
        elif args.action == "down":
            for note in c.down():
                print(note)
            print("down")
        else:
            running = c.running()
            for name in DAEMONS:
                print(
                    f"{name:23} {'pid ' + str(running[name]) if name in running else 'not running'}"
                )
            for ns in NAMESPACES:
                print(f"netns {ns:12} {'present' if netns_exists(ns) else 'absent'}")
            return 0 if len(running) == len(DAEMONS) else 1
    except (ClusterError, build.Unavailable, Busy) as e:
        print(f"e2e cluster {args.action}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
