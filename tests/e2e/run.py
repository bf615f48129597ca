#!/usr/bin/env python3
"""Runs one end-to-end scenario against a real control plane (docs/e2e.md).

Usage: run.py SCENARIO --tidal BIN --nvml-stub LIB --source-dir DIR
              [--agent BIN] [--cache-dir DIR] [--k8s-dist DIR]

Exit status: 0 pass, 1 fail, 77 skipped (what is missing is printed). The
Kubernetes binaries come from $KUBE_BIN_DIR, else from the distribution next to
the repository (../shared/k8s, unpacked into --cache-dir)."""
import argparse
import glob
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# pylint: disable=wrong-import-position
from checks import Checks
from harness import Cluster, Tools, find_kube_binaries, missing_tools
from scenarios import SCENARIOS

SKIP = 77
WORKDIR_PREFIX = "tidal-e2e-"


class Interrupted(BaseException):
    """A signal asked us to stop: unwinds through the finally blocks that stop
    every process."""


def _interrupt(signum, _frame):
    raise Interrupted(f"signal {signum}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--tidal", required=True, help="the tidal binary (serve, agent)")
    p.add_argument("--agent", help="the agent binary, as the DaemonSet runs it (tidal-agent); "
                   "default: tidal")
    p.add_argument("--nvml-stub", required=True, help="the NVML stand-in libnvidia-ml.so.1")
    p.add_argument("--source-dir", required=True, help="the repository (deploy/, examples/)")
    p.add_argument("--cache-dir", help="where to unpack the shared Kubernetes binaries "
                   "(default: build/release/k8s-bin under the source dir)")
    p.add_argument("--k8s-dist", help="the Kubernetes distribution with install.sh "
                   "(default: ../shared/k8s next to the source dir)")
    return p.parse_args()


def find_tools(args):
    """Tools, or None after printing what is missing."""
    args.agent = args.agent or args.tidal
    for path, what in ((args.tidal, "--tidal"), (args.agent, "--agent"),
                       (args.nvml_stub, "--nvml-stub")):
        # Built with the tests: a missing one is a broken build, not a skip.
        if not os.path.isfile(path):
            raise SystemExit(f"{what} {path}: no such file (build it first)")
    missing = [f"{t} (apt-get install {'etcd-server' if t == 'etcd' else t})"
               for t in missing_tools()]
    cache = args.cache_dir or os.path.join(args.source_dir, "build", "release", "k8s-bin")
    kube_bin, why = find_kube_binaries(args.source_dir, cache, args.k8s_dist)
    if why:
        missing.append(f"kube-apiserver and kube-scheduler: {why}")
    if missing:
        print("SKIPPED: the end-to-end tests need:\n  " + "\n  ".join(missing), flush=True)
        return None
    return Tools(kube_bin, os.path.abspath(args.tidal), os.path.abspath(args.agent),
                 os.path.abspath(args.nvml_stub), os.path.abspath(args.source_dir))


def remove_stale_workdirs():
    """Temporary directories of runs that were killed (SIGKILL leaves no chance to
    clean up): each holds its runner's process id."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{WORKDIR_PREFIX}*")):
        try:
            with open(os.path.join(path, "runner.pid"), encoding="utf-8") as f:
                os.kill(int(f.read()), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (OSError, ValueError):
            continue  # not ours to judge: being made, or someone else's


def make_workdir(name):
    workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{name}-")
    with open(os.path.join(workdir, "runner.pid"), "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    return workdir


def run_scenario(name, tools, checks):
    scenario = SCENARIOS[name]
    remove_stale_workdirs()
    workdir = make_workdir(name)
    cluster = Cluster(tools, scenario.nodes(), workdir)
    if hasattr(scenario, "policy"):  # the deploy's policy as the scenario changes it
        cluster.policy = scenario.policy(cluster.policy)
    try:
        cluster.start()
        scenario.run(cluster, checks)
    except (Exception, Interrupted) as e:  # pylint: disable=broad-except
        checks.error(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    finally:
        if not checks.ok:
            print(f"\nlogs of the components (tails; the whole logs were in {workdir}):\n"
                  f"{cluster.sup.tails()}", flush=True)
        cluster.stop()
        if os.environ.get("TIDAL_E2E_KEEP"):
            print(f"kept {workdir} (TIDAL_E2E_KEEP)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def main():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    args = parse_args()
    tools = find_tools(args)
    if tools is None:
        return SKIP
    checks = Checks()
    started = time.monotonic()
    print(f"e2e.{args.scenario}: kube binaries in {tools.kube_bin_dir}", flush=True)
    run_scenario(args.scenario, tools, checks)
    elapsed = time.monotonic() - started
    verdict = "PASSED" if checks.ok else "FAILED"
    print(f"\ne2e.{args.scenario} {verdict} in {elapsed:.0f} s: {checks.passed} checks passed, "
          f"{len(checks.failures)} failed", flush=True)
    for f in checks.failures:
        print(f"  - {f.splitlines()[0]}")
    return 0 if checks.ok else 1


if __name__ == "__main__":
    sys.exit(main())
