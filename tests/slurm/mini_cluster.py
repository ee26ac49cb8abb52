"""A private Slurm cluster on localhost for the tests: munged, slurmctld and slurmd from Debian's
packages (slurm-wlm, munge), one node `NODE` with 4 CPUs and 3 GPUs that are character devices
made for the test (no GPU needed), two free ports, everything under one temporary folder.

Every daemon runs in the foreground under kopt-leash, so it ends when the test process ends,
however that ends; `stop()` also cancels every job first and shuts the cluster down. The
scheduler runs every second (bf_interval=1), so tests do not wait on its default 30 s cycle.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NODE = "kopt-node"
GPUS = 3
CPUS = 4


class ClusterUnavailable(Exception):
    """Slurm cannot run here: the test is skipped with this reason."""


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class MiniCluster:
    def __init__(self, leash):
        self.leash = leash
        self.dir = None
        self.daemons = []
        self.env = None

    # -- set-up --------------------------------------------------------------------------------
    def start(self, timeout=30):
        for tool in ("munged", "mungekey", "slurmctld", "slurmd", "srun", "squeue", "scontrol"):
            if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
                raise ClusterUnavailable(
                    "%s is not installed (Debian: apt-get install slurmctld slurmd slurm-client "
                    "munge; test.sh does it)" % tool)
        if os.geteuid() != 0:
            raise ClusterUnavailable("slurmd must run as root to start jobs (CI runs as root)")
        self.dir = tempfile.mkdtemp(prefix="kopt-slurm-")
        os.chmod(self.dir, 0o755)  # munged wants its socket's folders searchable by all
        d = self.dir
        for sub in ("munge", "ctld", "spool"):
            os.mkdir(os.path.join(d, sub), 0o700 if sub == "munge" else 0o755)
        os.chmod(os.path.join(d, "munge"), 0o711)
        self._run(["/usr/sbin/mungekey", "--create", "--keyfile", d + "/munge/munge.key"])
        for i in range(GPUS):
            os.mknod("%s/gpu%d" % (d, i), 0o666 | 0o020000, os.makedev(1, 3))  # like /dev/null
        ctld_port, slurmd_port = _free_ports(2)
        with open(d + "/slurm.conf", "w") as f:
            f.write(SLURM_CONF.format(dir=d, node=NODE, host=socket.gethostname().split(".")[0], cpus=CPUS, gpus=GPUS,
                                      ctld_port=ctld_port, slurmd_port=slurmd_port))
        with open(d + "/gres.conf", "w") as f:
            f.write("NodeName=%s Name=gpu File=%s/gpu[0-%d]\n" % (NODE, d, GPUS - 1))
        self.env = dict(os.environ, SLURM_CONF=d + "/slurm.conf")
        for key in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[key]  # a test run inside a real job must not join it
        self._daemon("munged", ["/usr/sbin/munged", "--foreground", "--force",
                                "--socket=" + d + "/munge/socket", "--key-file=" + d +
                                "/munge/munge.key", "--pid-file=" + d + "/munge/pid",
                                "--seed-file=" + d + "/munge/seed", "--log-file=" + d +
                                "/munge/log"])
        self._wait(lambda: os.path.exists(d + "/munge/socket"), 10, "munged")
        self._daemon("slurmctld", ["/usr/sbin/slurmctld", "-D", "-c", "-f", d + "/slurm.conf"])
        self._daemon("slurmd", ["/usr/sbin/slurmd", "-D", "-N", NODE, "-f", d + "/slurm.conf"])
        self._wait(lambda: self.node_state() == "idle", timeout, "the node to become idle")
        return self

    def _run(self, argv, check=True, timeout=30):
        result = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), result.returncode,
                                                    result.stderr.strip()))
        return result

    def _daemon(self, name, argv):
        log = open(os.path.join(self.dir, name + ".out"), "w")
        process = subprocess.Popen([self.leash, "--"] + argv, env=self.env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
        self.daemons.append((name, process))

    def _wait(self, ready, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.daemons:
                if process.poll() is not None:
                    raise ClusterUnavailable("%s exited (%s): %s" % (name, process.returncode,
                                                                     self.log_tail(name)))
            try:
                if ready():
                    return
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.2)
        raise ClusterUnavailable("timed out waiting for %s: %s" % (what, self.log_tail()))

    def log_tail(self, name=None, lines=8):
        names = [name] if name else ["slurmctld", "slurmd"]
        text = []
        for n in names:
            for path in (os.path.join(self.dir, n + ".out"), os.path.join(self.dir, n + ".log")):
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        text += ["%s: %s" % (n, l.rstrip()) for l in f.readlines()[-lines:]]
        return " | ".join(text)

    # -- queries and faults ----------------------------------------------------------------------
    def slurm(self, *argv, check=True):
        return self._run(list(argv), check=check)

    def node_state(self):
        return self.slurm("sinfo", "-h", "-N", "-n", NODE, "-o", "%T").stdout.strip()

    def jobs(self):
        """{job name: (job id, state)} of every job in the queue."""
        out = self.slurm("squeue", "-h", "-o", "%j %i %T").stdout
        return {p[0]: (p[1], p[2]) for p in (l.split() for l in out.splitlines()) if len(p) == 3}

    def steps(self):
        out = self.slurm("squeue", "-h", "-s", "-o", "%j %i").stdout
        return dict(l.split() for l in out.splitlines() if len(l.split()) == 2)

    def wait_until(self, condition, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))

    # -- tear-down -------------------------------------------------------------------------------
    def stop(self):
        if self.env and self.daemons:
            self._run(["scancel", "--quiet", "--full", "--user=root"], check=False)
            # slurmstepd outlives a cluster shut down under it: let the jobs end first.
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self._run(["squeue", "-h"], check=False).stdout:
                time.sleep(0.25)
            self._run(["scontrol", "shutdown"], check=False)
        for _, process in self.daemons:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.terminate()  # the leash passes it on
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.daemons = []
        strays = self._sweep()
        if strays:
            print("mini_cluster: killed what outlived the cluster: %s" % "; ".join(strays))
        if self.dir and not os.environ.get("KOPT_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def _sweep(self):
        """SIGKILL to every process still running with this cluster's SLURM_CONF in its
        environment (slurmstepd, a worker, a daemon, munged), so that nothing the tests started
        outlives them whatever happened; returns what it killed."""
        if not self.env:
            return []
        mark = ("SLURM_CONF=" + self.env["SLURM_CONF"]).encode()
        killed = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            if int(pid) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if mark not in f.read().split(b"\0"):
                        continue
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    name = f.read().split(b"\0")[0].decode(errors="replace")
                os.kill(int(pid), signal.SIGKILL)
                killed.append("%s (pid %s)" % (name, pid))
            except (OSError, ValueError):
                pass  # gone meanwhile, or not ours to read
        return killed


SLURM_CONF = """# The tests' private cluster (tests/slurm/mini_cluster.py).
ClusterName=kopttest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge/socket
CredType=cred/munge
StateSaveLocation={dir}/ctld
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerParameters=bf_interval=1
KillWait=2
MinJobAge=2
InactiveLimit=0
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 Gres=gpu:{gpus} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""
