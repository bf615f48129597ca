"""FGD in the extender: the fgd plugin with `tasks: learned` learns the GPU workload
from the pods it filters and places a 1-GPU pod where it strands the fewest GPUs
the learned 4-GPU pods need, so that the next 4-GPU pod still finds a whole node.

Four nodes of 4 GPUs, equally loaded. Two 4-GPU pods take two nodes; two 1-GPU
pods follow. By live load alone the second 1-GPU pod scores alike on both free
nodes (kube-scheduler's LeastAllocated then sends it to the emptier one) and a
third 4-GPU pod finds no whole node; with fgd it joins the first 1-GPU pod."""
from harness import TEST_NAMESPACE, a10_node
from pods import create, gpu_indices, gpu_pod, node_of, wait_bound

BIND_S = 60


def nodes():
    return [a10_node(f"node-{i}", (0.10, 0.10, 0.10, 0.10)) for i in range(4)]


def policy(p):
    """The deploy's policy with fgd learning the target workload, if it has no fgd."""
    p.setdefault("plugins", {}).setdefault(
        "fgd", {"weight": 1, "args": {"tasks": "learned", "wholeGpuScoreStep": 3}})
    return p


def bind(api, pod):
    create(api, [pod])
    return wait_bound(api, pod["metadata"]["name"], BIND_S)


def run(cluster, checks):
    api = cluster.api
    fgd = cluster.policy["plugins"]["fgd"]
    checks.check(fgd["args"]["tasks"] == "learned", "serve runs fgd with tasks: learned", fgd)
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
