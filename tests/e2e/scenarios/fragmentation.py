"""FGD in the extender: the fgd plugin with `tasks: learned` learns the GPU workload
from the pods it filters and places a 1-GPU pod where it strands the fewest GPUs
the learned 4-GPU pods need, so that the next 4-GPU pod still finds a whole node.

Four nodes of 4 GPUs, equally loaded. Two 4-GPU pods take two nodes; two 1-GPU
pods follow. By live load alone the second 1-GPU pod scores alike on both free
nodes (kube-scheduler's LeastAllocated then sends it to the emptier one) and a
third 4-GPU pod finds no whole node; with fgd it joins the first 1-GPU pod.

The deploy's fgd (`tasks: learned`, `onlyWithTidalDevicePlugin`; its weight raised,
see policy()): fgd acts only once the pod watch shows a pod that
Tidal's device plugin gave the GPUs Tidal named. No kubelet runs here, so the
scenario leaves that mark (`tidal.io/gpus-allocated`) on each bound pod as the
device plugin's Allocate would."""
from harness import TEST_NAMESPACE, a10_node
from pods import create, gpu_indices, gpu_pod, node_of, wait_bound

BIND_S = 60


def nodes():
    return [a10_node(f"node-{i}", (0.10, 0.10, 0.10, 0.10)) for i in range(4)]


def policy(p):
    """The deploy's policy with fgd's weight raised from 0.25 to 1, its args kept.
    At 0.25 of a 4.25 total, fgd moves a node's score by about 3 points of 100: it
    decides between nodes whose other scores fall within one of kube-scheduler's
    0-10 extender priorities (in the simulator's seed batch, often; docs/traces.md
    measures the weight), and here balance's spread outweighs it. At 1 this
    scenario's one decision is fgd's."""
    p["plugins"]["fgd"]["weight"] = 1
    return p


def bind(api, pod):
    """Creates the pod, waits for its binding, and marks it as Tidal's device plugin
    does once it gave the pod the GPUs named in tidal.io/gpus."""
    create(api, [pod])
    name = pod["metadata"]["name"]
    bound = wait_bound(api, name, BIND_S)
    gpus = bound["metadata"].get("annotations", {}).get("tidal.io/gpus")
    if gpus is not None:
        api.merge_patch(f"/api/v1/namespaces/{TEST_NAMESPACE}/pods/{name}",
                        {"metadata": {"annotations": {"tidal.io/gpus-allocated": gpus}}})
    return bound


def run(cluster, checks):
    api = cluster.api
    fgd = cluster.policy["plugins"]["fgd"]
    checks.check(fgd["args"]["tasks"] == "learned" and fgd["args"]["onlyWithTidalDevicePlugin"],
                 "the deploy's policy runs fgd with tasks: learned, with Tidal's device plugin",
                 fgd)
    big = [bind(api, gpu_pod(f"big-{i}", gpus=4)) for i in range(2)]
    full = {node_of(p) for p in big}
    checks.check(len(full) == 2, "each 4-GPU pod took a node of its own", full)
    first = bind(api, gpu_pod("small-a", gpus=1))
    second = bind(api, gpu_pod("small-b", gpus=1))
    checks.check(node_of(second) == node_of(first),
                 "the second 1-GPU pod joins the first, leaving a node whole for 4-GPU pods",
                 f"small-a on {node_of(first)}, small-b on {node_of(second)}")
    checks.check(gpu_indices(second) and gpu_indices(first)
                 and set(gpu_indices(second)).isdisjoint(gpu_indices(first)),
                 "on a GPU of its own", (gpu_indices(first), gpu_indices(second)))
    last = bind(api, gpu_pod("big-2", gpus=4))
    whole = {n for n in cluster.nodes} - full - {node_of(first)}
    checks.check(node_of(last) in whole, "a third 4-GPU pod finds the whole node",
                 f"big-2 on {node_of(last)}, whole: {sorted(whole)}")
    checks.check(sorted(gpu_indices(last) or []) == [0, 1, 2, 3], "with all four GPUs",
                 gpu_indices(last))
    pods = {p["metadata"]["name"]: node_of(p) for p in api.pods(TEST_NAMESPACE)}
    print(f"e2e fragmentation: placements {pods}", flush=True)
