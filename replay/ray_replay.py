#!/usr/bin/env python3
"""Run a nextedit replay plan on a Ray cluster, then merge the shards into one run.

    nextedit replay --repo . --range HEAD~50..HEAD --suggester builtin:propagate --plan plan.jsonl
    python3 replay/ray_replay.py plan.jsonl --out results.db -- --suggester builtin:propagate
    nextedit report --db results.db 1

A plan file is data (it may come from another machine): the flags of its replay command
that run or expose something (--suggester, --sandbox, --allow-network, --sandbox-ro,
--sandbox-rw, --env, --cache-db, --historian-json) must be given again after `--`, the
same and in the same order; a plan whose command says otherwise is refused (exit 2)
before anything runs.

Each shard of the plan (one line of `nextedit replay ... --plan FILE`, or `--shards K`
groups of them) runs as one Ray task. The task invokes the `nextedit` binary with the
plan's replay arguments plus `--shard I/N --db <its own database>` in the plan's
working directory, so every node needs `nextedit` on its PATH (or `--nextedit PATH`)
and the plan's repository, trajectory files or database at the same paths (a shared
file system, or the same checkout on every node). A task whose worker dies (a node
lost, a process killed) is run again, up to `--max-retries` times; each attempt writes
a fresh database, so a half-written one is never merged. When every shard is done,
`nextedit runs merge --db OUT SHARD.db...` joins them into one run whose report
equals the single-machine run's (run id, times and latencies aside).

Where it runs:
  (no option)              a local Ray instance on this machine (`--num-cpus N`)
  --address auto           the cluster this machine joined (`ray start --address ...`)
  --address ray://H:10001  a remote cluster through Ray Client (a KubeRay head service)
  --local-nodes K          K local Ray nodes (`ray.cluster_utils.Cluster`, one CPU each
                           unless --num-cpus): a multi-node cluster on one machine, for
                           tests and for measuring

Prints one JSON line per shard as it finishes (shard, seconds, node, attempts), then
the merge's output, then a JSON summary line with the wall time. Exit status: 0 when
merged, 1 when merged with missing shards (--allow-partial), 2 on an error.

Ray's usage statistics are switched off (nothing is sent anywhere) and no dashboard UI
is asked for (a local head still serves Ray's internal HTTP API on 127.0.0.1 only). Fault injection for tests: RAY_REPLAY_KILL_ONCE=MARKER makes the first task
that finds MARKER absent create it and kill its own worker process once its nextedit
run has started, as a lost node would.
"""
import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time
import uuid

# Before Ray is imported: never send usage statistics anywhere.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

import ray  # noqa: E402  (the environment above must be set first)

# Standard output carries this driver's lines only; what Ray prints (its workers'
# and raylets' messages) goes to standard error.
OUT = sys.stdout
sys.stdout = sys.stderr

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In the nextedit child: be killed when the Ray worker that started it dies, so a
    retried shard never races a leftover run."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def fail(message):
    """Ends the driver with exit status 2."""
    print(f"ray_replay: error: {message}", file=sys.stderr)
    sys.exit(2)


# The replay flags that run or expose something, and whether each takes a value.
GUARDED = {
    "--suggester": True,
    "--sandbox": True,
    "--allow-network": False,
    "--sandbox-ro": True,
    "--sandbox-rw": True,
    "--env": True,
    "--cache-db": True,
    "--historian-json": True,
}


def guarded_flags(args):
    """The (flag, value) pairs of the guarded flags in a replay command line, in order
    (`--flag value` and `--flag=value` alike; None for a flag without a value)."""
    found = []
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
        if name not in GUARDED:
            continue
        if not GUARDED[name]:
            found.append((name, value if eq else None))
        elif eq:
            found.append((name, value))
        else:
            found.append((name, next(rest, None)))
    return found


def check_command(path, command, given):
    """Refuses a plan whose replay command runs or exposes anything the command line
    of this driver does not say again (`given`: the arguments after `--`)."""
    args = command.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args) or args[:1] != ["replay"]:
        fail(f"{path}: its command is not a nextedit replay command line")
    if "--" in args:
        fail(f"{path}: its command holds `--`")
    planned = guarded_flags(args)
    asserted = guarded_flags(given)
    if planned != asserted:

        def show(pairs):
            return " ".join(f + ("" if v is None else f" {v}") for f, v in pairs) or "nothing"

        fail(
            f"{path} runs its shards with {show(planned)}, but this command line gives "
            f"{show(asserted)} after `--`: give the same flags to run it "
            "(a plan is data: nothing it names is run on its word)"
        )


def read_plan(path):
    """The plan's lines, checked: one replay command, one shard count."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        fail(f"cannot read the plan {path}: {e}")
    if not lines:
        fail(f"{path} has no shards")
    commands = {json.dumps(line["command"], sort_keys=True) for line in lines}
    counts = {line["shards"] for line in lines}
    if len(commands) != 1 or counts != {len(lines)}:
        fail(f"{path} is not one plan (its lines differ in command or shard count)")
    return lines


@ray.remote(num_cpus=1)
def run_shard(nextedit, command, shard, shards, out_dir):
    """Runs `nextedit replay ... --shard shard/shards` into a fresh database; returns
    where it is and how it went. Raises when nextedit ends with an error (status 2)."""
    started = time.monotonic()
    final = os.path.join(out_dir, f"shard-{shard}-of-{shards}.db")
    # An earlier attempt whose worker died left its half-written database: never used.
    for stale in glob.glob(glob.escape(final) + ".attempt-*"):
        os.remove(stale)
    attempt = f"{final}.attempt-{uuid.uuid4().hex[:12]}"
    argv = [nextedit, *command["args"], "--shard", f"{shard}/{shards}", "--db", attempt]
    child = subprocess.Popen(
        argv,
        cwd=command["cwd"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,
    )
    marker = os.environ.get("RAY_REPLAY_KILL_ONCE")
    if marker:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            # Mid-run: once nextedit has created its database.
            while not os.path.exists(attempt) and child.poll() is None:
                time.sleep(0.01)
            os.write(fd, f"shard {shard} attempt {attempt}\n".encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    out, err = child.communicate()
    # 1: the shard ran and some trajectories failed (recorded in its run).
    if child.returncode not in (0, 1):
        raise RuntimeError(
            f"shard {shard}/{shards}: nextedit exited with {child.returncode}: "
            f"{err.decode(errors='replace').strip()}"
        )
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(attempt + suffix):
            os.replace(attempt + suffix, final + suffix)
    return {
        "shard": shard,
        "shards": shards,
        "db": final,
        "status": child.returncode,
        "seconds": round(time.monotonic() - started, 3),
        "node": ray.get_runtime_context().get_node_id(),
    }


def start_ray(args):
    """Connects to the cluster asked for; returns a local multi-node cluster to shut
    down, if one was started."""
    if args.ray_temp_dir:
        # Every Ray file of a local instance (sessions, sockets, the address file)
        # goes under this directory instead of /tmp/ray.
        os.environ["RAY_TMPDIR"] = os.path.abspath(args.ray_temp_dir)
        os.makedirs(os.path.join(os.environ["RAY_TMPDIR"], "ray"), exist_ok=True)
    if args.local_nodes:
        from ray.cluster_utils import Cluster

        cluster = Cluster()
        for _ in range(args.local_nodes):
            cluster.add_node(num_cpus=args.num_cpus or 1, include_dashboard=False)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        return cluster
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        options = {"include_dashboard": False, "log_to_driver": False}
        if args.num_cpus:
            options["num_cpus"] = args.num_cpus
        ray.init(**options)
    return None


def main():
    parser = argparse.ArgumentParser(
        description="Run nextedit replay plans on Ray and merge the shards (see the module doc).",
        usage="%(prog)s PLAN... --out DB [options] -- --suggester SPEC [sandbox flags of the plan]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("plans", nargs="+", metavar="PLAN", help="plan files (replay --plan); each becomes one merged run")
    parser.add_argument("--out", required=True, metavar="DB", help="database the merged runs are added to")
    parser.add_argument("--shards-dir", metavar="DIR", help="where shard databases go [default: OUT's directory/shards]")
    parser.add_argument("--nextedit", default="nextedit", metavar="PATH", help="the nextedit binary on the nodes [default: nextedit]")
    parser.add_argument("--shards", type=int, metavar="K", help="run K shards per plan instead of one per line")
    parser.add_argument("--max-retries", type=int, default=3, metavar="N", help="runs of a task whose worker died [default: 3]")
    parser.add_argument("--allow-partial", action="store_true", help="merge even if shards failed (the run is marked partial)")
    parser.add_argument("--address", metavar="ADDR", help="Ray cluster address (auto, ray://HOST:10001); default: a local instance")
    parser.add_argument("--num-cpus", type=int, metavar="N", help="CPUs of the local instance (or of each --local-nodes node)")
    parser.add_argument("--local-nodes", type=int, metavar="K", help="start K local Ray nodes (ray.cluster_utils.Cluster)")
    parser.add_argument("--ray-temp-dir", metavar="DIR", help="Ray's session directory for a local instance")
    argv = sys.argv[1:]
    given = []
    if "--" in argv:
        at = argv.index("--")
        argv, given = argv[:at], argv[at + 1 :]
    args = parser.parse_args(argv)

    nextedit = args.nextedit
    if os.sep in nextedit:
        nextedit = os.path.abspath(nextedit)
    out = os.path.abspath(args.out)
    shards_dir = os.path.abspath(args.shards_dir or os.path.join(os.path.dirname(out), "shards"))
    plans = [read_plan(p) for p in args.plans]
    for path, lines in zip(args.plans, plans):
        check_command(path, lines[0]["command"], given)

    wall = time.monotonic()
    cluster = start_ray(args)
    status = 0
    try:
        task = run_shard.options(max_retries=args.max_retries, retry_exceptions=False)
        for number, (path, lines) in enumerate(zip(args.plans, plans)):
            count = args.shards or len(lines)
            out_dir = os.path.join(shards_dir, f"plan-{number}")
            os.makedirs(out_dir, exist_ok=True)
            command = lines[0]["command"]
            pending = [task.remote(nextedit, command, i, count, out_dir) for i in range(count)]
            done = []
            failed = []
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                try:
                    result = ray.get(ready[0])
                except (ray.exceptions.RayError, RuntimeError) as e:
                    failed.append(str(e).strip().splitlines()[-1])
                    print(json.dumps({"plan": path, "error": failed[-1]}), file=OUT, flush=True)
                    continue
                done.append(result["db"])
                print(json.dumps({"plan": path, **result}), file=OUT, flush=True)
            if failed and not args.allow_partial:
                print(f"ray_replay: error: {len(failed)} of {count} shards of {path} failed", file=sys.stderr)
                return 2
            if not done:
                print(f"ray_replay: error: no shard of {path} finished", file=sys.stderr)
                return 2
            merge = [nextedit, "runs", "merge", "--db", out, *sorted(done)]
            if args.allow_partial:
                merge.append("--allow-partial")
            merged = subprocess.run(merge, capture_output=True, text=True)
            OUT.write(merged.stdout)
            OUT.flush()
            sys.stderr.write(merged.stderr)
            if merged.returncode == 2:
                return 2
            status = max(status, merged.returncode)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
    print(json.dumps({"summary": True, "plans": len(plans), "wall_seconds": round(time.monotonic() - wall, 3)}), file=OUT, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
