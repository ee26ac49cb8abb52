#!/usr/bin/env python3
"""`kopt run` with its GPU workers started through srun, against a real slurmctld and slurmd on
this machine (tests/slurm/mini_cluster.py). The workers are the fake worker of tests/sandbox,
which answers the sandbox protocol without a GPU, so everything but the GPU is real: srun's
queue, its steps, scancel, a drained node, a job's time limit, a killed daemon.

    slurm_test.py KOPT KOPT_LEASH FAKE_WORKER TASKS_ROOT EXAMPLE_DIR

Exit 77 (ctest: skipped) with the reason when Slurm cannot run here.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mini_cluster import ClusterUnavailable, MiniCluster, NODE  # noqa: E402

KOPT, LEASH, FAKE_WORKER, TASK_DIR, EXAMPLE_DIR = sys.argv[1:6] if len(sys.argv) >= 6 else [""] * 5
CLUSTER = None


def srun_template(*extra):
    return ["srun", "--exact", "--ntasks=1", "--gres=gpu:1"] + list(extra) + ["{worker}"]


class Daemon:
    """One `kopt run` of the tuner over the task suite (axpy alone has only 3 tuner configurations:
    too short a run), its workers through srun; --candidates-per-task bounds it."""

    def __init__(self, test, template, gpus=(0,), eval_ms=200, candidates=8, sbatch=None):
        self.dir = tempfile.mkdtemp(prefix="kopt-slurm-run-")
        test.addCleanup(self.kill)
        daemon = {"worker": FAKE_WORKER, "worker_command": template}
        if gpus is not None:
            daemon["gpus"] = list(gpus)
        self.config = os.path.join(self.dir, "config.json")
        with open(self.config, "w") as f:
            json.dump({"daemon": daemon}, f)
        self.db = os.path.join(self.dir, "memory.db")
        self.env = dict(CLUSTER.env, KOPT_FAKE_EVAL_MS=str(eval_ms),
                        KOPT_CACHE_DIR=os.path.join(self.dir, "cache"))
        self.args = ["--tasks", TASK_DIR, "--db", self.db, "--config", self.config, "--no-display",
                     "--candidates-per-task", str(candidates)]
        self.output = open(os.path.join(self.dir, "output.txt"), "w")
        self.process = None
        if sbatch is None:
            self.process = subprocess.Popen([KOPT, "run"] + self.args, env=self.env,
                                            stdin=subprocess.DEVNULL, stdout=self.output,
                                            stderr=subprocess.STDOUT)

    def log(self):
        path = os.path.join(self.dir, "runs", "memory", "1", "kopt.log")
        if not os.path.exists(path):
            return ""
        with open(path, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, timeout):
        try:
            return CLUSTER.wait_until(lambda: re.search(pattern, self.log()), timeout,
                                      "%r in the log" % pattern)
        except AssertionError as e:
            raise AssertionError("%s; squeue: %s; log tail: %s; Slurm's logs: %s" % (
                e, CLUSTER.jobs(), self.log()[-1500:], CLUSTER.log_tail())) from None

    def status(self):
        out = subprocess.run([KOPT, "status", "--db", self.db, "--json"], env=self.env,
                             capture_output=True, text=True, timeout=30)
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {}

    def status_text(self):
        return subprocess.run([KOPT, "status", "--db", self.db], env=self.env,
                              capture_output=True, text=True, timeout=30).stdout

    def candidates(self):
        return sum(t.get("candidates", 0) for t in self.status().get("tasks", []))

    def failures(self):
        return sum(t.get("failures", 0) for t in self.status().get("tasks", []))

    def wait_candidates(self, count, timeout):
        CLUSTER.wait_until(lambda: self.candidates() >= count, timeout,
                           "%d candidates judged; log tail: %s" % (count, self.log()[-1500:]))

    def finish(self, timeout=120):
        code = self.process.wait(timeout=timeout)
        return code

    def stop(self):
        """SIGTERM, as Slurm or an admin sends it: the run drains and exits 0."""
        self.process.send_signal(signal.SIGTERM)
        return self.finish()

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.output.close()
        if not os.environ.get("KOPT_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)


def run_jobs():
    return {name: v for name, v in CLUSTER.jobs().items() if name.startswith("kopt-run-")}


def wait_no_run_jobs(test, seconds=5):
    CLUSTER.wait_until(lambda: not run_jobs(), seconds,
                       "no kopt job left in the queue (squeue: %s)" % CLUSTER.jobs())


class SlurmWorkersTest(unittest.TestCase):
    def setUp(self):
        self.started = time.monotonic()

    def tearDown(self):
        # The test's daemon first: a live one would start new workers into the emptied queue.
        self.doCleanups()
        # Whatever a test did to the cluster, the next one starts from an idle node.
        CLUSTER.slurm("scancel", "--quiet", "--user=root", check=False)
        CLUSTER.slurm("scontrol", "update", "nodename=" + NODE, "state=resume", check=False)
        CLUSTER.wait_until(lambda: not CLUSTER.jobs(), 20, "an empty queue")
        sys.stderr.write("(%.0f s) " % (time.monotonic() - self.started))

    def fill_gpus(self, count):
        """A job of someone else's holding `count` of the node's GPUs."""
        CLUSTER.slurm("sbatch", "--job-name=someone-else", "--gres=gpu:%d" % count, "--output=/dev/null",
                      "--wrap", "sleep 600")
        CLUSTER.wait_until(lambda: CLUSTER.jobs().get("someone-else", ("", ""))[1] == "RUNNING",
                           20, "the other job to run")

    def test_workers_start_through_srun_are_named_after_the_run_and_leave_nothing(self):
        daemon = Daemon(self, srun_template(), gpus=(0, 1), eval_ms=300, candidates=10)
        names = CLUSTER.wait_until(
            lambda: {n for n, (_, state) in run_jobs().items() if state == "RUNNING"} >=
            {"kopt-run-1-gpu0", "kopt-run-1-gpu1"}, 60, "both workers' jobs running")
        self.assertTrue(names)
        self.assertEqual(daemon.finish(), 0, daemon.log()[-2000:])
        self.assertGreaterEqual(daemon.candidates(), 10)
        self.assertEqual(daemon.failures(), 0, daemon.log()[-2000:])
        wait_no_run_jobs(self)

    def test_a_queued_worker_is_waiting_not_hung_and_the_other_gpu_goes_on(self):
        self.fill_gpus(2)  # one of the three left: one worker runs, the other queues
        daemon = Daemon(self, srun_template(), gpus=(0, 1), eval_ms=200, candidates=12)
        found = daemon.wait_log(r"GPU (\d): the worker waits to start: srun: job (\d+) queued", 60)
        waiting = "worker GPU %s: waiting" % found.group(1)
        CLUSTER.wait_until(lambda: waiting in daemon.status_text(), 10, "kopt status to say so")
        before = daemon.candidates()
        daemon.wait_candidates(before + 3, 60)  # the running worker keeps judging
        self.assertIsNone(daemon.process.poll())
        self.assertNotIn("did not answer its first ping", daemon.log())
        CLUSTER.slurm("scancel", "--name=someone-else")
        daemon.wait_log(r"GPU %s: the worker runs \(pid \d+ on \S+\) after" % found.group(1), 30)
        self.assertEqual(daemon.stop(), 0, daemon.log()[-2000:])
        self.assertEqual(daemon.failures(), 0, daemon.log()[-2000:])
        wait_no_run_jobs(self)

    def test_scancel_of_a_step_costs_the_candidate_in_flight_at_most(self):
        daemon = Daemon(self, srun_template(), eval_ms=1500, candidates=6)
        daemon.wait_candidates(1, 60)  # past the baseline
        job_id = run_jobs()["kopt-run-1-gpu0"][0]
        CLUSTER.slurm("scancel", job_id)
        # In flight (a crash) or between requests, the log says Slurm's reason.
        daemon.wait_log(r"the worker (died during the request|exited while idle) .*\*\*\* "
                        r"STEP %s\.\d+ ON \S+ "
                        r"CANCELLED AT" % job_id, 30)
        before = daemon.candidates()
        daemon.wait_candidates(before + 2, 60)  # a new worker through srun
        self.assertEqual(daemon.stop(), 0, daemon.log()[-2000:])
        self.assertLessEqual(daemon.failures(), 1, daemon.log()[-2000:])
        wait_no_run_jobs(self)

    def test_a_drained_node_keeps_running_workers_and_queues_restarts(self):
        daemon = Daemon(self, srun_template(), eval_ms=500, candidates=12)
        daemon.wait_candidates(1, 60)
        CLUSTER.slurm("scontrol", "update", "nodename=" + NODE, "state=drain",
                      "reason=kopt-test-maintenance")
        before = daemon.candidates()
        daemon.wait_candidates(before + 2, 30)  # a drain ends no running job
        CLUSTER.slurm("scancel", run_jobs()["kopt-run-1-gpu0"][0])
        # srun says only that it waits; squeue says why.
        daemon.wait_log(r"GPU 0: (the worker waits|still waiting) to start: srun: job \d+ queued.*; "
                        r"Slurm's reason: .*(ReqNodeNotAvail|DRAINED)", 60)
        CLUSTER.wait_until(lambda: "worker GPU 0: waiting" in daemon.status_text(), 10,
                           "kopt status to say GPU 0 waits")
        CLUSTER.slurm("scontrol", "update", "nodename=" + NODE, "state=resume")
        daemon.wait_log(r"GPU 0: the worker runs", 30)
        before = daemon.candidates()
        daemon.wait_candidates(before + 2, 30)
        self.assertEqual(daemon.stop(), 0, daemon.log()[-2000:])
        self.assertLessEqual(daemon.failures(), 1, daemon.log()[-2000:])
        wait_no_run_jobs(self)

    def test_a_time_limit_mid_request_costs_one_candidate_and_sigterm_leaves_nothing(self):
        daemon = Daemon(self, srun_template("--time=1"), eval_ms=2000, candidates=1000)
        daemon.wait_log(r"DUE TO TIME LIMIT", 150)
        failures = daemon.failures()
        self.assertLessEqual(failures, 1, daemon.log()[-2000:])
        before = daemon.candidates()
        daemon.wait_candidates(before + 2, 60)  # a new worker, a new job
        self.assertEqual(daemon.stop(), 0, daemon.log()[-2000:])
        wait_no_run_jobs(self)

    def test_kill_9_of_the_daemon_leaves_no_step_and_no_pending_job(self):
        self.fill_gpus(2)
        daemon = Daemon(self, srun_template(), gpus=(0, 1), eval_ms=5000, candidates=50)
        daemon.wait_log(r"the worker waits to start", 60)
        CLUSTER.wait_until(lambda: sorted(s for _, s in run_jobs().values()) ==
                           ["PENDING", "RUNNING"], 30, "one worker running, one queued")
        daemon.process.kill()
        daemon.process.wait()
        wait_no_run_jobs(self)

    def test_the_example_batch_script_uses_the_gpus_slurm_granted(self):
        with open(os.path.join(EXAMPLE_DIR, "workers.json")) as f:
            template = json.load(f)["daemon"]["worker_command"]
        daemon = Daemon(self, template, gpus=None, eval_ms=200, candidates=6, sbatch=True)
        out = os.path.join(daemon.dir, "job.out")
        submitted = subprocess.run(
            ["sbatch", "--parsable", "--gres=gpu:2", "--ntasks=3", "--time=5",
             "--output=" + out, "--export=ALL,KOPT=%s,KOPT_CONFIG=%s" % (KOPT, daemon.config),
             os.path.join(EXAMPLE_DIR, "kopt-run.sbatch")] + daemon.args,
            env=daemon.env, capture_output=True, text=True, timeout=30)
        self.assertEqual(submitted.returncode, 0, submitted.stderr)
        job = submitted.stdout.strip().split(";")[0]
        daemon.wait_log(r"inside Slurm job %s: one worker for each of the 2 GPU\(s\) it was "
                        r"granted \(SLURM_JOB_GPUS=0,1\), as --gpus 0,1" % job, 60)
        steps = CLUSTER.wait_until(lambda: {"kopt-run-1-gpu0", "kopt-run-1-gpu1"} <=
                                   set(CLUSTER.steps()) and CLUSTER.steps(), 60,
                                   "both workers as steps of job %s" % job)
        self.assertTrue(all(v.startswith(job + ".") for k, v in steps.items() if "kopt-run" in k))
        CLUSTER.wait_until(lambda: job not in [i for i, _ in CLUSTER.jobs().values()], 120,
                           "the batch job to end")
        with open(out) as f:
            self.assertRegex(f.read(), r"run 1 finished", daemon.log()[-2000:])


def main():
    global CLUSTER
    if not os.path.exists(KOPT):
        sys.exit(__doc__)
    # ctest's timeout sends SIGTERM: the cluster still stops (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    CLUSTER = MiniCluster(LEASH)
    try:
        try:
            CLUSTER.start()
        except ClusterUnavailable as e:
            print("SKIPPED: Slurm cannot run here: %s" % e)
            sys.exit(77)
        result = unittest.main(argv=[sys.argv[0]] + sys.argv[6:], exit=False, verbosity=2).result
    finally:
        CLUSTER.stop()
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
