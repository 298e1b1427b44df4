#!/usr/bin/env python3
"""Gatehouse against n8n 2.8.4 and Restate 1.7, side by side, in one run on this machine.

Gatehouse is measured three times, as three columns:
- `gatehouse`: with a GitHub token, as a deployment on GitHub runs. Its REST API points
  at a local stub, so status comments are posted and edited. Its git URL points at a
  local one-commit bare repository, which a run on an issue clones before its first node.
- `gatehouse-notoken`: webhooks and label triggers only. There are no comments and no
  clone, so it does the same work as the peers.
- `gatehouse-distributed`: as `gatehouse-notoken`, in distributed mode: `gatehouse serve`
  ingest, scheduler and runner as three processes, each with a data directory of its
  own, on a fresh Postgres database and a NATS prefix of the run's own (both removed
  afterwards; `PEERS_POSTGRES` and `PEERS_NATS` say where they are).

Every step is `sh -c` writing `date +%s.%N` to a file named after the GitHub issue
number. A latency is that timestamp minus the driver's clock just before it sent the
request (one machine, one clock). The figures, for each system:

1. Trigger → first step running, p50 / p99. The trigger is the same signed GitHub
   `issues.labeled` body for all (tests/fixtures/github/issues.labeled.json), with a fresh
   issue number and `X-GitHub-Delivery` each time. It goes to:
   - Gatehouse's `/webhooks/github`, where a `[[github.triggers]]` label starts a
     one-script SOP;
   - n8n's Webhook → Execute Command;
   - Restate's ingress (`/bench/trigger/send`), to a handler whose first `ctx.run` runs
     the command (restate-service.js).
2. Gate decision → next step running, p50 / p99, on script → gate → script:
   - Gatehouse: approved with the admin token, through
     `POST /api/v1/runs/{run}/gates/gate/decision`;
   - n8n: a Wait node "On Webhook Call", resumed by a POST to `$execution.resumeUrl`;
   - Restate: an awakeable, resolved by `POST /restate/awakeables/{id}/resolve`.
   The decision is sent a pause after the first step wrote its file. One refused because
   the gate is not waiting yet is sent again, timed from the new try, and counted.
3. 100 triggers at once, released together from 100 threads: each run's time to its
   first (and only) step, p50, and the total until the last one ran.
4. Memory: PSS (proportional set size, from /proc/PID/smaps_rollup) summed over each
   system's server processes and their children (`gatehouse up`; the three `gatehouse
   serve`; n8n and its task runner; restate-server and the Node deployment), with the sum
   of their VmRSS beside it. The target is judged on PSS: summed RSS counts a page that
   several processes share once for each of them (the three `serve` processes run one
   binary, n8n's two processes one Node), where PSS divides it among them, so its sum is
   the memory the system takes on one machine. Each Gatehouse column runs a copy of the
   binary of its own, so no column shares pages with another.
   It is read idle and with 1,000 runs waiting at the gate: once just after they all
   reached it, and again after Restate's one-minute inactivity timeout has suspended its
   invocations (the figure reported).

Figures 1 and 2 are sampled round-robin, each round in a rotated order, with a pause
after every sample so trailing work settles. Figure 3 runs in alternating blocks. Machine
noise therefore hits every system alike. Ratios are each Gatehouse column over each peer,
and memory is also compared with the lighter peer. The issue's targets are reported,
never enforced: the p50s and the burst total at most 0.8× Restate's, memory at most 0.2×
the lighter peer's.

Uneven points, by design:
- Gatehouse verifies the HMAC signature, stores every delivery under its id before the
  202, de-duplicates deliveries and label events, and records the issue as a
  requirement. n8n and Restate do none of this; they do not read the signature at all.
- Gatehouse runs at most `runner.concurrency` nodes at once (default 4 per core), which bounds
  the burst. The peers start all 100 steps as soon as they arrive.
- Gatehouse reads at most `server.max_unverified_bodies` webhook bodies at once (default
  16, kept here; `--gatehouse-max-bodies` changes it). The rest of a burst get 503 with
  Retry-After: 1, and the driver sends them again after that second, inside the figure.
  Slack would retry the same way. GitHub would not: it records the delivery as failed,
  and reconciliation finds the label within `github.reconcile_interval` (5 minutes).
  The peers take all 100 at once.
- Otherwise every system runs on its defaults and logs at its default level to a file:
  Gatehouse on SQLite with the in-process bus and the process sandbox; n8n on SQLite in
  regular mode; Restate as a single dev node.

Usage: python3 deploy/bench/peers/peers.py [--samples N] [--systems LIST]
       [--gatehouse-bin PATH] [--peers-dir DIR] [--keep]   (--help lists the rest)
n8n and Restate are installed from the npm registry into --peers-dir (default
$PEERS_DIR or /tmp/gatehouse-peers) on the first run and reused after. With
GATEHOUSE_BENCH_JSON=FILE, the figures and ratios are also written there as JSON.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURE = REPO / "tests/fixtures/github/issues.labeled.json"

N8N_VERSION = "2.8.4"
RESTATE_SERVER_VERSION = "1.7.12"
RESTATE_SDK_VERSION = "~1.17.0"

BENCH_REPO = "bench/hello-world"
TRIGGER_LABEL = "bench:trigger"
GATED_LABEL = "bench:gated"
WEBHOOK_SECRET = b"peers-bench-secret"
GATEHOUSES = ("gatehouse", "gatehouse-notoken", "gatehouse-distributed")
PEERS = ("restate", "n8n")
# `--baseline-bin`: `up` without a token from another binary, a column every Gatehouse
# column is also compared with, so a change is judged against the code before it in one
# run (run to run, the latency figures move by ±15 % on a shared machine).
BASELINE = "baseline"
# Distributed mode's Postgres (the server's `postgres` user, trust auth) and NATS.
POSTGRES = os.environ.get("PEERS_POSTGRES", "postgres://postgres@127.0.0.1:5432")
NATS = os.environ.get("PEERS_NATS", "nats://127.0.0.1:4222")
DISTRIBUTED_SERVICES = ("ingest", "scheduler", "runner")
SYSTEMS = (*GATEHOUSES, "n8n", "restate")


class BenchError(Exception):
    """A problem with the setup, printed as one message without a traceback."""


# ---------------------------------------------------------------------------------------
# Processes, ports, HTTP
# ---------------------------------------------------------------------------------------


class Processes:
    """Every process the benchmark starts, each in a process group of its own, so that
    stopping one also stops what it spawned (n8n's task runner, a step's shell)."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def start(self, argv: list[str], log: Path, **kwargs) -> subprocess.Popen:
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs
            )
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            stop_group(proc)
        self.started.clear()


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the process's group, SIGKILL after `grace` seconds."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Request:
    """One HTTP request, built before the clock starts."""

    method: str
    url: str
    body: bytes = b""
    headers: dict = field(default_factory=dict)

    def send(self, timeout: float = 60.0) -> tuple[int, dict, bytes]:
        """Sends it on a fresh connection (as GitHub and a browser click would)."""
        url = urllib.parse.urlsplit(self.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
        try:
            path = url.path + (f"?{url.query}" if url.query else "")
            conn.request(self.method, path, body=self.body, headers=self.headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()


def get(url: str) -> tuple[int, bytes]:
    """Status and body of a GET; status 0 while nothing listens."""
    try:
        status, _, body = Request("GET", url).send(timeout=5)
        return status, body
    except OSError:
        return 0, b""


def wait_until(what: str, ready, timeout: float, log: Path | None = None) -> None:
    """Polls `ready()` until it is true; a BenchError naming `what` (and the log) if not."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            where = f"; see {log}" if log else ""
            raise BenchError(f"{what} did not happen within {timeout:.0f} s{where}")
        time.sleep(0.1)


def require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if not path:
        raise BenchError(f"`{name}` is not on PATH: {hint}")
    return path


def run_checked(argv: list[str], what: str, log: Path, **kwargs) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise BenchError(f"{what} failed (exit {done.returncode}); end of {log}:\n{tail}")


# ---------------------------------------------------------------------------------------
# The trigger: a signed GitHub issues.labeled delivery
# ---------------------------------------------------------------------------------------


class Deliveries:
    """The fixture's `issues.labeled` body for a given issue number and label, signed."""

    def __init__(self) -> None:
        if not FIXTURE.exists():
            raise BenchError(f"the GitHub fixture {FIXTURE} is missing")
        self.template = json.loads(FIXTURE.read_text())
        owner, name = BENCH_REPO.split("/")
        repository = self.template["repository"]
        repository.update(full_name=BENCH_REPO, name=name)
        repository["owner"]["login"] = owner

    def body(self, issue: int, label: str) -> bytes:
        payload = copy.deepcopy(self.template)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        payload["label"]["name"] = label
        payload["issue"].update(
            number=issue,
            id=issue,
            title=f"peers benchmark issue {issue}",
            updated_at=now,
            labels=[dict(payload["label"])],
        )
        return json.dumps(payload).encode()

    def headers(self, body: bytes) -> dict:
        signature = hmac.new(WEBHOOK_SECRET, body, hashlib.sha256).hexdigest()
        return {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/peers-bench",
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={signature}",
        }

    def request(self, url: str, issue: int, label: str) -> Request:
        body = self.body(issue, label)
        return Request("POST", url, body, self.headers(body))


# ---------------------------------------------------------------------------------------
# The systems
# ---------------------------------------------------------------------------------------


class System:
    """One system under measure. Its steps write `<out>/<issue>.first` (a timestamp, then
    for the gated flow the handle a decision needs) and `<out>/<issue>.second`."""

    name = ""
    title = ""

    def __init__(self, scratch: Path, procs: Processes, deliveries: Deliveries) -> None:
        self.dir = scratch / self.name
        self.out = self.dir / "out"
        self.out.mkdir(parents=True)
        self.procs = procs
        self.deliveries = deliveries
        self.roots: list[subprocess.Popen] = []

    def log(self, name: str) -> Path:
        return self.dir / f"{name}.log"

    def start(self) -> None:
        raise NotImplementedError

    def trigger(self, issue: int, gated: bool) -> Request:
        """The request that starts the one-step flow, or the gated one, for `issue`."""
        raise NotImplementedError

    def decision(self, handle: str) -> Request:
        """The request that lets a run past its gate; `handle` is what its first step wrote."""
        raise NotImplementedError

    def memory_kib(self) -> tuple[int, int]:
        """RSS and PSS, in KiB, summed over the system's processes ([`tree_memory_kib`])."""
        return tree_memory_kib([p.pid for p in self.roots])

    def clean_up(self) -> None:
        """Removes what the system left outside the scratch folder, after its processes
        have stopped."""

    def check_alive(self) -> None:
        for proc in self.roots:
            if proc.poll() is not None:
                raise BenchError(f"{self.title} exited (code {proc.returncode}); see {self.dir}")


class Gatehouse(System):
    """`gatehouse up` on SQLite. With `github` (the column named `gatehouse`): a GitHub
    token, the REST API pointed at a local stub (status comments are posted and edited)
    and git at a local bare repository (a run on an issue clones it before its first
    node). Without (`gatehouse-notoken`): webhooks and label triggers only, as the peers."""

    def __init__(
        self, scratch, procs, deliveries, binary: Path, github: bool, max_bodies: int
    ) -> None:
        if not self.name:
            self.name = "gatehouse" if github else "gatehouse-notoken"
            self.title = "Gatehouse `up`" if github else "Gatehouse `up`, no token"
        super().__init__(scratch, procs, deliveries)
        # A copy of its own: PSS divides a page among every process mapping it, so columns
        # running one file would each be credited with part of the others' binary.
        self.binary = self.dir / "gatehouse"
        shutil.copy2(binary, self.binary)
        self.github = github
        self.max_bodies = max_bodies
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = self.dir / "data"
        self.token = ""

    def start(self) -> None:
        config = self.write_config(self.write_sops(), self.github_keys() if self.github else "")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        proc = self.procs.start(
            [str(self.binary), "up", "--config", str(config), "--data-dir", str(self.data)],
            self.log("gatehouse"),
            env=env,
            cwd=self.dir,
        )
        self.roots = [proc]
        token = self.data / "admin.token"
        wait_until(
            "`gatehouse up` answering /healthz",
            lambda: proc.poll() is None and token.exists() and get(f"{self.url}/healthz")[0] == 200,
            120,
            self.log("gatehouse"),
        )
        self.check_alive()
        self.token = token.read_text().strip()

    def github_keys(self) -> str:
        """Starts the GitHub stub and makes the bare repository; their `[github]` keys."""
        stub_port = free_port()
        self.procs.start(
            [sys.executable, str(Path(__file__).resolve()), "github-stub", str(stub_port)],
            self.log("github-stub"),
        )
        wait_until(
            "the GitHub stub listening", lambda: get(f"http://127.0.0.1:{stub_port}/")[0], 10
        )
        return (
            f'api_url = "http://127.0.0.1:{stub_port}"\n'
            f'git_url = "{self.bare_repository()}"\n'
            'token = "bench-token"\n'
        )

    def bare_repository(self) -> Path:
        """`<git>/bench/hello-world.git` with one commit: what a run on the issue clones."""
        git = require_tool("git", "install git (apt-get install git)")
        root = self.dir / "git"
        work = self.dir / "git-work"
        log = self.log("git")
        run_checked([git, "init", "-q", "-b", "main", str(work)], "git init", log)
        (work / "README.md").write_text("peers benchmark\n")
        author = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        run_checked([git, "-C", str(work), "add", "README.md"], "git add", log)
        run_checked([git, "-C", str(work), *author, "commit", "-qm", "init"], "git commit", log)
        bare = root / f"{BENCH_REPO}.git"
        run_checked([git, "clone", "-q", "--bare", str(work), str(bare)], "git clone --bare", log)
        return root

    def write_sops(self) -> Path:
        sops = self.dir / "sops"
        sops.mkdir()
        out = shlex.quote(str(self.out))
        first = f'echo "$(date +%s.%N) $GATEHOUSE_RUN_ID" > {out}/"$GATEHOUSE_PARAM_ISSUE".first'
        second = f'date +%s.%N > {out}/"$GATEHOUSE_PARAM_ISSUE".second'
        params = "params: { issue: { required: true } }\n"
        (sops / "bench-trigger.yaml").write_text(
            "name: bench-trigger\n" + params + "nodes:\n"
            f"  first: {{ kind: script, run: {json.dumps(first)} }}\n"
        )
        (sops / "bench-gated.yaml").write_text(
            "name: bench-gated\n" + params + "nodes:\n"
            f"  first: {{ kind: script, run: {json.dumps(first)} }}\n"
            "  gate: { kind: gate, needs: [first], approvers: [group:admins] }\n"
            f"  second: {{ kind: script, needs: [gate], run: {json.dumps(second)} }}\n"
        )
        return sops

    def write_config(self, sops: Path, github_keys: str) -> Path:
        config = self.dir / "gatehouse.toml"
        triggers = "".join(
            f'[[github.triggers]]\nlabel = "{label}"\nsop = "{sop}"\nrepos = ["{BENCH_REPO}"]\n'
            for label, sop in ((TRIGGER_LABEL, "bench-trigger"), (GATED_LABEL, "bench-gated"))
        )
        config.write_text(
            "[server]\n"
            f'listen = "127.0.0.1:{self.port}"\n'
            f'sop_dirs = ["{sops}"]\n'
            f"max_unverified_bodies = {self.max_bodies}\n"
            "[github]\n"
            f'webhook_secrets = ["{WEBHOOK_SECRET.decode()}"]\n' + github_keys + triggers
        )
        return config

    def trigger(self, issue: int, gated: bool) -> Request:
        label = GATED_LABEL if gated else TRIGGER_LABEL
        return self.deliveries.request(f"{self.url}/webhooks/github", issue, label)

    def decision(self, handle: str) -> Request:
        return Request(
            "POST",
            f"{self.url}/api/v1/runs/{handle}/gates/gate/decision",
            b'{"decision":"approve"}',
            {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )


class Baseline(Gatehouse):
    """`up` without a token, as `gatehouse-notoken`, from the `--baseline-bin` binary."""

    name = BASELINE

    def __init__(self, scratch, procs, deliveries, binary: Path, max_bodies: int) -> None:
        self.title = f"baseline ({binary.name})"
        super().__init__(scratch, procs, deliveries, binary, False, max_bodies)


class GatehouseDistributed(Gatehouse):
    """Distributed mode without a token: `gatehouse serve` ingest, scheduler and runner as
    three processes, each with a data directory of its own, on a fresh Postgres database
    and a NATS prefix of the run's own (events, jobs and blobs in JetStream). Both are
    removed afterwards."""

    name, title = "gatehouse-distributed", "Gatehouse distributed"

    def __init__(self, scratch, procs, deliveries, binary: Path, max_bodies: int) -> None:
        super().__init__(scratch, procs, deliveries, binary, False, max_bodies)
        suffix = uuid.uuid4().hex[:8]
        self.database = f"peers_{suffix}"
        self.prefix = f"peers{suffix}"
        self.created = False

    def env(self, data: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
        env.update(
            GATEHOUSE_DATABASE_URL=f"{POSTGRES}/{self.database}",
            GATEHOUSE_NATS_URL=NATS,
            GATEHOUSE_NATS_PREFIX=self.prefix,
            GATEHOUSE_DATA_DIR=str(data),
        )
        return env

    def start(self) -> None:
        config = self.write_config(self.write_sops(), "")
        psql = require_tool("psql", "install the PostgreSQL client (apt-get install postgresql-client)")
        run_checked(
            [psql, f"{POSTGRES}/postgres", "-qc", f"CREATE DATABASE {self.database}"],
            "creating the benchmark's database",
            self.log("postgres"),
        )
        self.created = True
        common = ["--config", str(config)]
        run_checked(
            [str(self.binary), "migrate", *common],
            "gatehouse migrate",
            self.log("migrate"),
            env=self.env(self.dir / "data-migrate"),
            cwd=self.dir,
        )
        for service in DISTRIBUTED_SERVICES:
            listen = self.url.removeprefix("http://") if service == "ingest" else f"127.0.0.1:{free_port()}"
            env = self.env(self.dir / f"data-{service}")
            env["GATEHOUSE_RUNNER__ID"] = service
            proc = self.procs.start(
                [str(self.binary), "serve", service, "--listen", listen, *common],
                self.log(service),
                env=env,
                cwd=self.dir,
            )
            self.roots.append(proc)
            wait_until(
                f"`gatehouse serve {service}` ready",
                lambda: proc.poll() is None and get(f"http://{listen}/readyz")[0] == 200,
                120,
                self.log(service),
            )
        self.check_alive()
        self.token = (self.dir / "data-ingest" / "admin.token").read_text().strip()

    def clean_up(self) -> None:
        if self.created:
            subprocess.run(
                ["psql", f"{POSTGRES}/postgres", "-qc", f"DROP DATABASE IF EXISTS {self.database}"],
                capture_output=True,
                check=False,
            )
        streams = [f"{self.prefix.upper()}_{k}" for k in ("EVENTS", "JOBS")]
        delete_nats_streams([*streams, f"OBJ_{self.prefix}_blobs"])


def delete_nats_streams(names: list[str]) -> None:
    """Deletes JetStream streams through the NATS protocol itself (no client library):
    a request to `$JS.API.STREAM.DELETE.<name>` each, answers awaited on one inbox."""
    url = urllib.parse.urlsplit(NATS)
    try:
        with socket.create_connection((url.hostname, url.port or 4222), timeout=5) as sock:
            sock.recv(4096)  # INFO
            inbox = f"_INBOX.peers{uuid.uuid4().hex}"
            out = b'CONNECT {"verbose":false,"pedantic":false}\r\n'
            out += f"SUB {inbox} 1\r\n".encode()
            for name in names:
                out += f"PUB $JS.API.STREAM.DELETE.{name} {inbox} 0\r\n\r\n".encode()
            out += b"PING\r\n"
            sock.sendall(out)
            seen = b""
            deadline = time.monotonic() + 5
            while seen.count(b"MSG ") < len(names) and time.monotonic() < deadline:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                seen += chunk
    except OSError as e:
        print(f"peers benchmark: could not delete the NATS streams {names}: {e}", file=sys.stderr)


class DistributedBaseline(GatehouseDistributed):
    """Distributed mode, as `gatehouse-distributed`, from the `--baseline-bin` binary
    (`--baseline-mode distributed`)."""

    name = BASELINE

    def __init__(self, scratch, procs, deliveries, binary: Path, max_bodies: int) -> None:
        super().__init__(scratch, procs, deliveries, binary, max_bodies)
        self.title = f"baseline distributed ({binary.name})"


class N8n(System):
    """n8n in regular mode on SQLite; two workflows imported and published before start."""

    name, title = "n8n", f"n8n {N8N_VERSION}"

    def __init__(self, scratch, procs, deliveries, peers_dir: Path) -> None:
        super().__init__(scratch, procs, deliveries)
        self.peers_dir = peers_dir
        self.port = free_port()
        self.broker_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def env(self) -> dict:
        return {
            **os.environ,
            "N8N_USER_FOLDER": str(self.dir / "home"),
            "N8N_PORT": str(self.port),
            "N8N_RUNNERS_BROKER_PORT": str(self.broker_port),
            "N8N_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_HOST": "127.0.0.1",
            "WEBHOOK_URL": f"{self.url}/",
            "NODES_EXCLUDE": "[]",
            "N8N_DIAGNOSTICS_ENABLED": "false",
            "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
            "N8N_TEMPLATES_ENABLED": "false",
            "N8N_PERSONALIZATION_ENABLED": "false",
            "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false",
        }

    def start(self) -> None:
        n8n = ensure_n8n(self.peers_dir)
        node = require_tool("node", "install Node.js 20 (n8n 2.8.4 needs Node 20)")
        workflows = self.write_workflows()
        log = self.log("n8n")
        for workflow_id, path in workflows:
            cli = [node, str(n8n)]
            run_checked(
                [*cli, "import:workflow", f"--input={path}"],
                "n8n import:workflow",
                log,
                env=self.env(),
            )
            run_checked(
                [*cli, "publish:workflow", f"--id={workflow_id}"],
                "n8n publish:workflow",
                log,
                env=self.env(),
            )
        proc = self.procs.start([node, str(n8n), "start"], log, env=self.env(), cwd=self.dir)
        self.roots = [proc]
        wait_until(
            "n8n's two workflows active",
            lambda: proc.poll() is None and self.webhooks_active(),
            300,
            log,
        )
        self.check_alive()

    def webhooks_active(self) -> bool:
        """Both production webhooks registered: a GET is refused as the wrong method, not
        as an unknown webhook (n8n answers /healthz before it activates workflows)."""
        for path in ("bench-trigger", "bench-gated"):
            _, body = get(f"{self.url}/webhook/{path}")
            if b"not registered for GET" not in body:
                return False
        return True

    def write_workflows(self) -> list[tuple[str, Path]]:
        out = []
        for workflow in n8n_workflows(self.out):
            path = self.dir / f"{workflow['id']}.json"
            path.write_text(json.dumps(workflow, indent=1))
            out.append((workflow["id"], path))
        return out

    def trigger(self, issue: int, gated: bool) -> Request:
        path = "bench-gated" if gated else "bench-trigger"
        return self.deliveries.request(
            f"{self.url}/webhook/{path}", issue, GATED_LABEL if gated else TRIGGER_LABEL
        )

    def decision(self, handle: str) -> Request:
        return Request("POST", handle, b"{}", {"Content-Type": "application/json"})


def n8n_workflows(out: Path) -> list[dict]:
    """Webhook → Execute Command; Webhook → Execute Command → Wait (On Webhook Call) →
    Execute Command. The issue number comes from the webhook's body."""
    issue = "{{ $('Webhook').item.json.body.issue.number }}"
    out = shlex.quote(str(out))

    def node(name: str, kind: str, version: float, x: int, **parameters) -> dict:
        return {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{name}/{x}")),
            "name": name,
            "type": f"n8n-nodes-base.{kind}",
            "typeVersion": version,
            "position": [x, 0],
            "parameters": parameters,
        }

    def webhook(path: str) -> dict:
        hook = node(
            "Webhook",
            "webhook",
            2,
            0,
            httpMethod="POST",
            path=path,
            responseMode="onReceived",
            options={},
        )
        hook["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, path))
        return hook

    def command(name: str, x: int, script: str) -> dict:
        return node(name, "executeCommand", 1, x, command=f"={script}")

    def chain(*names: str) -> dict:
        return {
            a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
            for a, b in zip(names, names[1:], strict=False)
        }

    first = command("First", 200, f"date +%s.%N > {out}/{issue}.first")
    trigger = {
        "id": "PeersBenchTrigger",
        "name": "peers bench: trigger",
        "nodes": [webhook("bench-trigger"), first],
        "connections": chain("Webhook", "First"),
        "settings": {"executionOrder": "v1"},
        "active": False,
    }
    wait = node("Gate", "wait", 1.1, 400, resume="webhook", httpMethod="POST", options={})
    wait["webhookId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "bench-gate"))
    gated = {
        "id": "PeersBenchGated",
        "name": "peers bench: gated",
        "nodes": [
            webhook("bench-gated"),
            command(
                "First",
                200,
                f'echo "$(date +%s.%N) {{{{ $execution.resumeUrl }}}}" > {out}/{issue}.first',
            ),
            wait,
            command("Second", 600, f"date +%s.%N > {out}/{issue}.second"),
        ],
        "connections": chain("Webhook", "First", "Gate", "Second"),
        "settings": {"executionOrder": "v1"},
        "active": False,
    }
    return [trigger, gated]


class Restate(System):
    """restate-server as one dev node, and restate-service.js as its deployment."""

    name, title = "restate", f"Restate {RESTATE_SERVER_VERSION}"

    def __init__(self, scratch, procs, deliveries, peers_dir: Path) -> None:
        super().__init__(scratch, procs, deliveries)
        self.peers_dir = peers_dir
        self.ingress = f"http://127.0.0.1:{free_port()}"
        self.admin = f"http://127.0.0.1:{free_port()}"

    def start(self) -> None:
        server, modules = ensure_restate(self.peers_dir)
        node = require_tool("node", "install Node.js 20")
        env = {
            **os.environ,
            "RESTATE_INGRESS__BIND_ADDRESS": self.ingress.removeprefix("http://"),
            "RESTATE_ADMIN__BIND_ADDRESS": self.admin.removeprefix("http://"),
            "RESTATE_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
            "RESTATE_DISABLE_TELEMETRY": "true",
            "RESTATE_LOG_DISABLE_ANSI_CODES": "true",
        }
        argv = [
            str(server),
            "--no-logo",
            "--listen-mode",
            "tcp",
            "--base-dir",
            str(self.dir / "data"),
        ]
        restate = self.procs.start(argv, self.log("restate-server"), env=env, cwd=self.dir)
        service_port = free_port()
        service_env = {
            **os.environ,
            "BENCH_OUT": str(self.out),
            "PORT": str(service_port),
            "NODE_PATH": str(modules),
        }
        service = self.procs.start(
            [node, str(HERE / "restate-service.js")],
            self.log("restate-service"),
            env=service_env,
            cwd=self.dir,
        )
        self.roots = [restate, service]
        wait_until(
            "restate-server's admin API",
            lambda: get(f"{self.admin}/health")[0] == 200,
            60,
            self.log("restate-server"),
        )
        self.register(f"http://127.0.0.1:{service_port}")
        wait_until(
            "restate-server's ingress",
            lambda: get(f"{self.ingress}/restate/health")[0] == 200,
            60,
            self.log("restate-server"),
        )
        self.check_alive()

    def register(self, uri: str) -> None:
        """Registers the service deployment with the admin API (retried while it starts)."""
        body = json.dumps({"uri": uri}).encode()
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _, answer = Request(
                    "POST", f"{self.admin}/deployments", body, {"Content-Type": "application/json"}
                ).send()
            except OSError as e:
                status, answer = 0, str(e).encode()
            if status in (200, 201):
                return
            if time.monotonic() > deadline:
                raise BenchError(
                    f"registering the Restate deployment failed: {status} {answer[:300]!r}"
                )
            time.sleep(0.3)

    def trigger(self, issue: int, gated: bool) -> Request:
        handler = "gated" if gated else "trigger"
        return self.deliveries.request(
            f"{self.ingress}/bench/{handler}/send", issue, GATED_LABEL if gated else TRIGGER_LABEL
        )

    def decision(self, handle: str) -> Request:
        return Request(
            "POST",
            f"{self.ingress}/restate/awakeables/{handle}/resolve",
            b"null",
            {"Content-Type": "application/json"},
        )


# ---------------------------------------------------------------------------------------
# Installing the peers (npm registry only), finding Gatehouse
# ---------------------------------------------------------------------------------------


def npm_install(folder: Path, package: dict, what: str) -> None:
    require_tool("node", "install Node.js 20 and npm")
    npm = require_tool("npm", "install npm (it comes with Node.js)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(json.dumps(package, indent=1))
    print(f"installing {what} into {folder} (npm; a few minutes the first time) ...", flush=True)
    run_checked(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
        f"npm install of {what}",
        folder / "npm-install.log",
        cwd=folder,
    )


def ensure_n8n(peers_dir: Path) -> Path:
    folder = peers_dir / "n8n"
    cli = folder / "node_modules/n8n/bin/n8n"
    if installed_version(folder / "node_modules/n8n") != N8N_VERSION:
        # 2.9 and later need Node 22; the default xlsx comes from a CDN out of reach.
        package = {
            "private": True,
            "dependencies": {"n8n": N8N_VERSION},
            "overrides": {"xlsx": "0.18.5"},
        }
        npm_install(folder, package, f"n8n {N8N_VERSION}")
    if not cli.exists():
        raise BenchError(f"n8n's CLI is missing after the install: {cli}")
    return cli


def ensure_restate(peers_dir: Path) -> tuple[Path, Path]:
    folder = peers_dir / "restate"
    modules = folder / "node_modules"
    server = modules / "@restatedev/restate-server-linux-x64/bin/restate-server"
    if (
        installed_version(modules / "@restatedev/restate-server") != RESTATE_SERVER_VERSION
        or not (modules / "@restatedev/restate-sdk").exists()
    ):
        package = {
            "private": True,
            "dependencies": {
                "@restatedev/restate-server": RESTATE_SERVER_VERSION,
                "@restatedev/restate-sdk": RESTATE_SDK_VERSION,
            },
        }
        npm_install(folder, package, f"Restate {RESTATE_SERVER_VERSION}")
    if not server.exists():
        raise BenchError(
            f"the restate-server binary is missing after the install: {server} (x86-64 Linux only)"
        )
    return server, modules


def installed_version(package_dir: Path) -> str | None:
    try:
        return json.loads((package_dir / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def ensure_gatehouse(binary: Path, default: bool) -> Path:
    if binary.exists():
        return binary
    if not default:
        raise BenchError(f"--gatehouse-bin {binary} does not exist")
    cargo = require_tool("cargo", "install Rust, or pass --gatehouse-bin")
    print(
        f"{binary} is missing: cargo build --release -p gatehouse --locked (20+ minutes cold on 2 cores) ...",
        flush=True,
    )
    if (
        subprocess.run(
            [cargo, "build", "--release", "-p", "gatehouse", "--locked"], cwd=REPO
        ).returncode
        != 0
    ):
        raise BenchError("building Gatehouse failed")
    return binary


# ---------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------


class Issues:
    """Fresh issue numbers: each makes a new requirement, run and step file."""

    def __init__(self) -> None:
        self.next_number = int(time.time()) % 1_000_000 * 1000

    def take(self, n: int = 1) -> list[int]:
        numbers = list(range(self.next_number, self.next_number + n))
        self.next_number += n
        return numbers


def read_step(path: Path) -> tuple[float, str] | None:
    """A step's file once fully written: its timestamp and what follows it."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    if not text.endswith("\n"):
        return None
    stamp, _, rest = text.strip().partition(" ")
    return float(stamp), rest


def wait_step(system: System, path: Path, timeout: float = 60.0) -> tuple[float, str]:
    deadline = time.monotonic() + timeout
    while (step := read_step(path)) is None:
        if time.monotonic() > deadline:
            system.check_alive()
            raise BenchError(
                f"{system.title}: {path.name} was not written within {timeout:.0f} s; logs in {system.dir}"
            )
        time.sleep(0.002)
    return step


def send_accepted(system: System, request: Request) -> int:
    """Sends a trigger; a 503 is sent again after its Retry-After (and counts in the time).
    Returns how many 503s it took."""
    for refused in range(30):
        status, headers, body = request.send()
        if 200 <= status < 300:
            return refused
        if status != 503:
            raise BenchError(
                f"{system.title}: {request.method} {request.url} answered {status}: {body[:300]!r}"
            )
        time.sleep(float(headers.get("Retry-After", "1")))
    raise BenchError(f"{system.title}: {request.url} kept answering 503")


def decide(system: System, handle: str) -> tuple[float, int]:
    """Sends the decision until it is taken: the clock just before the try that was, and
    how many tries were refused as early. A 503 (busy) keeps the clock running; another
    refusal (the gate is not waiting yet) restarts it."""
    started, early = time.time(), 0
    for _ in range(100):
        status, headers, body = system.decision(handle).send()
        if 200 <= status < 300:
            return started, early
        if status == 503:
            time.sleep(float(headers.get("Retry-After", "0.05")))
            continue
        early += 1
        time.sleep(0.05)
        started = time.time()
    raise BenchError(
        f"{system.title}: the decision on {handle} was refused 100 times: {status} {body[:300]!r}"
    )


def rotated(systems: list[System], n: int) -> list[System]:
    k = n % len(systems)
    return systems[k:] + systems[:k]


def measure_trigger(systems: list[System], issues: Issues, samples: int, pause: float) -> dict:
    """Figure 1: seconds from sending a trigger to its step's timestamp, round-robin."""
    found = {s.name: [] for s in systems}
    for n in range(samples):
        for system in rotated(systems, n):
            (issue,) = issues.take()
            request = system.trigger(issue, gated=False)
            sent = time.time()
            send_accepted(system, request)
            stamp, _ = wait_step(system, system.out / f"{issue}.first")
            found[system.name].append(stamp - sent)
            time.sleep(pause)
    return found


def measure_gate(
    systems: list[System], issues: Issues, samples: int, pause: float
) -> tuple[dict, dict]:
    """Figure 2: seconds from the decision to the next step's timestamp, round-robin; and
    per system the decisions refused as early (sent before the gate was waiting)."""
    found = {s.name: [] for s in systems}
    early = {s.name: 0 for s in systems}
    for n in range(samples):
        for system in rotated(systems, n):
            (issue,) = issues.take()
            send_accepted(system, system.trigger(issue, gated=True))
            _, handle = wait_step(system, system.out / f"{issue}.first")
            time.sleep(pause)  # the gate opens after the first step; let it
            sent, refused = decide(system, handle)
            early[system.name] += refused
            stamp, _ = wait_step(system, system.out / f"{issue}.second")
            found[system.name].append(stamp - sent)
            time.sleep(pause)
    return found, early


def release_together(system: System, requests: list[Request]) -> tuple[float, int]:
    """Sends every request from its own thread, all released at once: the clock at release,
    and how many 503s they took."""
    barrier = threading.Barrier(len(requests) + 1)
    errors: list[Exception] = []
    refused: list[int] = []

    def send(request: Request) -> None:
        barrier.wait()
        try:
            refused.append(send_accepted(system, request))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=send, args=(r,)) for r in requests]
    for thread in threads:
        thread.start()
    released = time.time()
    barrier.wait()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return released, sum(refused)


def measure_burst(
    systems: list[System], issues: Issues, size: int, rounds: int, settle: float
) -> dict:
    """Figure 3: `size` triggers at once, in alternating blocks; each run's seconds to its
    step, the total until the last step ran per round, and the 503s answered."""
    found = {s.name: {"per_run": [], "totals": [], "answered_503": 0} for s in systems}
    for n in range(rounds):
        for system in rotated(systems, n):
            numbers = issues.take(size)
            requests = [system.trigger(i, gated=False) for i in numbers]
            released, refused = release_together(system, requests)
            found[system.name]["answered_503"] += refused
            stamps = [wait_step(system, system.out / f"{i}.first", timeout=600)[0] for i in numbers]
            per_run = [s - released for s in stamps]
            found[system.name]["per_run"].extend(per_run)
            found[system.name]["totals"].append(max(per_run))
            time.sleep(settle)
    return found


def load_waiting(system: System, issues: Issues, count: int) -> None:
    """Starts `count` gated runs (8 requests at a time) and waits for all their first steps."""
    numbers = issues.take(count)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: send_accepted(system, system.trigger(i, gated=True)), numbers))
    for i in numbers:
        wait_step(system, system.out / f"{i}.first", timeout=900)


def measure_memory(
    systems: list[System], issues: Issues, count: int, settle: float
) -> tuple[dict, dict]:
    """Figure 4: RSS and PSS idle, just after `count` runs reached the gate, and `settle` s
    later; `(rss, pss)`, each by system, in MiB."""
    rss: dict[str, dict] = {s.name: {} for s in systems}
    pss: dict[str, dict] = {s.name: {} for s in systems}

    def read(system: System, when: str) -> None:
        r, p = system.memory_kib()
        rss[system.name][when], pss[system.name][when] = mib(r), mib(p)

    for system in systems:
        read(system, "idle")
    last_loaded = time.monotonic()
    for system in systems:
        began = time.monotonic()
        load_waiting(system, issues, count)
        rss[system.name]["load_s"] = time.monotonic() - began
        time.sleep(5)
        read(system, "waiting_at_once")
        print(
            f"  {system.title}: {count} runs at the gate in {rss[system.name]['load_s']:.0f} s",
            flush=True,
        )
        last_loaded = time.monotonic()
    time.sleep(max(0.0, settle - (time.monotonic() - last_loaded)))
    for system in systems:
        system.check_alive()
        read(system, "waiting")
    return rss, pss


def tree_memory_kib(roots: list[int]) -> tuple[int, int]:
    """VmRSS and PSS of the processes `roots` and all their descendants, in KiB. Summed over
    processes, RSS counts a page shared by several of them (the text of one binary that
    three `gatehouse serve` processes run, of Node for n8n's two processes) once for each;
    PSS divides such a page among the processes sharing it, so its sum is the memory the
    system takes."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    rss = pss = 0
    todo = list(roots)
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        rss += kib_of(status, "VmRSS:")
        pss += kib_of(rollup, "Pss:")
    return rss, pss


def kib_of(text: str, key: str) -> int:
    """The KiB figure of the line starting with `key` in a /proc file; 0 without one."""
    for line in text.splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def mib(kib: int) -> float:
    return kib / 1024


# ---------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(
    trigger: dict,
    gate: tuple[dict, dict],
    burst: dict,
    memory: tuple[dict, dict],
    names: list[str],
) -> dict:
    gate_seconds, early = gate
    systems = {}
    for name in names:
        systems[name] = {
            "trigger_ms": latency(trigger[name]),
            "gate_ms": {**latency(gate_seconds[name]), "decisions_sent_early": early[name]},
            "burst": {
                "per_run_p50_s": percentile(burst[name]["per_run"], 0.5),
                "total_s": percentile(burst[name]["totals"], 0.5),
                "totals_s": burst[name]["totals"],
                "answered_503": burst[name]["answered_503"],
            },
            "rss_mib": memory[0][name],
            "pss_mib": memory[1][name],
        }
    return {"systems": systems, "ratios": ratios(systems)}


def latency(seconds: list[float]) -> dict:
    return {
        "p50": percentile(seconds, 0.5) * 1000,
        "p99": percentile(seconds, 0.99) * 1000,
        "samples": len(seconds),
    }


def ratios(systems: dict) -> dict:
    """Each Gatehouse column over each peer, per figure; memory also over the lighter peer."""
    peers = [p for p in PEERS if p in systems]
    out = {}
    for gatehouse in (g for g in GATEHOUSES if g in systems):
        g = systems[gatehouse]
        mine = {peer: ratios_to(g, systems[peer]) for peer in peers}
        if BASELINE in systems:
            mine[BASELINE] = ratios_to(g, systems[BASELINE])
        if peers:
            lighter = min(peers, key=lambda p: systems[p]["pss_mib"]["waiting"])
            mine["lighter_peer"] = lighter
            mine["rss_waiting_vs_lighter"] = mine[lighter]["rss_waiting"]
            mine["pss_waiting_vs_lighter"] = mine[lighter]["pss_waiting"]
        out[gatehouse] = mine
    return out


def ratios_to(g: dict, p: dict) -> dict:
    return {
        "trigger_p50": g["trigger_ms"]["p50"] / p["trigger_ms"]["p50"],
        "trigger_p99": g["trigger_ms"]["p99"] / p["trigger_ms"]["p99"],
        "gate_p50": g["gate_ms"]["p50"] / p["gate_ms"]["p50"],
        "gate_p99": g["gate_ms"]["p99"] / p["gate_ms"]["p99"],
        "burst_per_run_p50": g["burst"]["per_run_p50_s"] / p["burst"]["per_run_p50_s"],
        "burst_total": g["burst"]["total_s"] / p["burst"]["total_s"],
        "rss_idle": g["rss_mib"]["idle"] / p["rss_mib"]["idle"],
        "rss_waiting": g["rss_mib"]["waiting"] / p["rss_mib"]["waiting"],
        "pss_idle": g["pss_mib"]["idle"] / p["pss_mib"]["idle"],
        "pss_waiting": g["pss_mib"]["waiting"] / p["pss_mib"]["waiting"],
    }


def targets(ratios_of: dict, waiting: int) -> list[dict]:
    """The issue's targets that this run can judge, for each Gatehouse column."""
    found = []
    for gatehouse, r in ratios_of.items():
        judged = []
        if "restate" in r:
            judged += [
                ("trigger → first step p50 vs Restate", r["restate"]["trigger_p50"], 0.8),
                ("gate decision → next step p50 vs Restate", r["restate"]["gate_p50"], 0.8),
                ("burst total vs Restate", r["restate"]["burst_total"], 0.8),
            ]
        if "lighter_peer" in r:
            judged.append(
                (
                    f"memory (PSS), {waiting:,} waiting, vs {r['lighter_peer']}",
                    r["pss_waiting_vs_lighter"],
                    0.2,
                )
            )
        found += [
            {
                "system": gatehouse,
                "what": what,
                "ratio": ratio,
                "target": target,
                "met": ratio <= target,
            }
            for what, ratio, target in judged
        ]
    return found


def print_report(summary: dict, titles: dict) -> None:
    print_figures(summary, titles)
    print_ratios(summary, titles)
    print_notes(summary, titles)


def print_figures(summary: dict, titles: dict) -> None:
    s, burst, waiting = summary["systems"], summary["burst"], summary["waiting"]
    rows = [
        (
            "trigger → first step, p50 / p99",
            lambda x: f"{x['trigger_ms']['p50']:.1f} / {x['trigger_ms']['p99']:.1f} ms",
        ),
        (
            "gate decision → next step, p50 / p99",
            lambda x: f"{x['gate_ms']['p50']:.1f} / {x['gate_ms']['p99']:.1f} ms",
        ),
        (
            f"{burst} triggers at once: per run p50, total",
            lambda x: f"{x['burst']['per_run_p50_s']:.2f} s, {x['burst']['total_s']:.2f} s",
        ),
        (
            "memory idle, PSS (RSS)",
            lambda x: f"{x['pss_mib']['idle']:.0f} ({x['rss_mib']['idle']:.0f}) MiB",
        ),
        (
            f"memory, {waiting:,} runs waiting at a gate, PSS (RSS)",
            lambda x: f"{x['pss_mib']['waiting']:.0f} ({x['rss_mib']['waiting']:.0f}) MiB",
        ),
    ]
    print_markdown(
        ["figure", *(titles[n] for n in s)],
        [[what, *(cell(s[n]) for n in s)] for what, cell in rows],
    )


def print_ratios(summary: dict, titles: dict) -> None:
    pairs = [
        (g, p) for g, r in summary["ratios"].items() for p in (*PEERS, BASELINE) if p in r
    ]
    if not pairs:
        return
    burst, waiting = summary["burst"], summary["waiting"]
    rows = [
        (
            "trigger → first step, p50 / p99",
            lambda r: f"{r['trigger_p50']:.2f}× / {r['trigger_p99']:.2f}×",
        ),
        (
            "gate decision → next step, p50 / p99",
            lambda r: f"{r['gate_p50']:.2f}× / {r['gate_p99']:.2f}×",
        ),
        (
            f"{burst} at once: per run p50, total",
            lambda r: f"{r['burst_per_run_p50']:.2f}×, {r['burst_total']:.2f}×",
        ),
        ("memory idle, PSS (RSS)", lambda r: f"{r['pss_idle']:.2f}× ({r['rss_idle']:.2f}×)"),
        (
            f"memory, {waiting:,} waiting, PSS (RSS)",
            lambda r: f"{r['pss_waiting']:.3f}× ({r['rss_waiting']:.3f}×)",
        ),
    ]
    header = ["ratio", *(f"{titles[g]} / {titles[p]}" for g, p in pairs)]
    print_markdown(
        header, [[what, *(cell(summary["ratios"][g][p]) for g, p in pairs)] for what, cell in rows]
    )


def print_notes(summary: dict, titles: dict) -> None:
    """Retries that are inside the figures, and the issue's targets."""
    s = summary["systems"]
    notes = [
        (
            "triggers of the bursts answered 503 and sent again after Retry-After",
            lambda x: x["burst"]["answered_503"],
        ),
        (
            "decisions refused as sent before the gate was waiting (timed from the retry)",
            lambda x: x["gate_ms"]["decisions_sent_early"],
        ),
    ]
    for what, count in notes:
        listed = ", ".join(f"{titles[n]} {count(x)}" for n, x in s.items() if count(x))
        if listed:
            print(f"\n{what}: {listed}")
    if summary["targets"]:
        print("\nthe issue's targets (reported, not enforced):")
    for t in summary["targets"]:
        verdict = "met" if t["met"] else "NOT met"
        print(
            f"  {titles[t['system']]}: {t['what']}: {t['ratio']:.2f}× (target ≤ {t['target']}×) — {verdict}"
        )


def print_markdown(header: list[str], rows: list[list[str]]) -> None:
    print()
    print("| " + " | ".join(header) + " |")
    print("| --- |" + " ---: |" * (len(header) - 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")


# ---------------------------------------------------------------------------------------
# The GitHub stub (run as `peers.py github-stub PORT`, a process of its own)
# ---------------------------------------------------------------------------------------


class GithubStub(http.server.BaseHTTPRequestHandler):
    """Answers the GitHub REST calls Gatehouse makes (search, issue comments, a
    repository's default branch) with plausible JSON; anything else 404."""

    protocol_version = "HTTP/1.1"
    comments: dict[str, list[dict]] = {}
    next_id = 1
    lock = threading.Lock()

    def log_message(self, *args) -> None:  # quiet
        pass

    def reply(self, status: int, value) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_json(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        parts = path.strip("/").split("/")
        if path == "/search/issues":
            self.reply(200, {"total_count": 0, "incomplete_results": False, "items": []})
        elif len(parts) == 6 and parts[0] == "repos" and parts[5] == "comments":
            with self.lock:
                self.reply(200, list(self.comments.get(path, [])))
        elif len(parts) == 3 and parts[0] == "repos":
            full = f"{parts[1]}/{parts[2]}"
            self.reply(
                200,
                {
                    "id": 1,
                    "name": parts[2],
                    "full_name": full,
                    "default_branch": "main",
                    "private": False,
                },
            )
        else:
            self.reply(200 if path == "/" else 404, {"message": "Not Found"})

    def do_POST(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        body = self.read_json()
        with self.lock:
            comment = {
                "id": GithubStub.next_id,
                "body": body.get("body", ""),
                "html_url": "https://github.invalid/c",
            }
            GithubStub.next_id += 1
            self.comments.setdefault(path, []).append(comment)
        self.reply(201, comment)

    def do_PATCH(self) -> None:
        comment_id = int(urllib.parse.urlsplit(self.path).path.rsplit("/", 1)[1])
        self.reply(200, {"id": comment_id, "body": self.read_json().get("body", "")})


def serve_github_stub(port: int) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), GithubStub)
    server.daemon_threads = True
    server.serve_forever()


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=int, default=50, help="samples per latency figure and system (default 50)"
    )
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated, of {','.join(SYSTEMS)} (default all)",
    )
    parser.add_argument(
        "--gatehouse-bin",
        type=Path,
        help="the gatehouse binary (default target/release/gatehouse, built if missing)",
    )
    parser.add_argument(
        "--baseline-bin",
        type=Path,
        help="another gatehouse binary, measured as a column `baseline` and compared with",
    )
    parser.add_argument(
        "--baseline-mode",
        choices=("up", "distributed"),
        default="up",
        help="how the baseline binary runs: `up` without a token, as gatehouse-notoken (the"
        " default), or as gatehouse-distributed",
    )
    parser.add_argument(
        "--gatehouse-max-bodies",
        type=int,
        default=16,
        help="Gatehouse's server.max_unverified_bodies (default 16, its own default)",
    )
    parser.add_argument(
        "--peers-dir",
        type=Path,
        default=Path(os.environ.get("PEERS_DIR", "/tmp/gatehouse-peers")),
        help="where n8n and Restate are installed and the run's scratch goes",
    )
    parser.add_argument(
        "--burst", type=int, default=100, help="triggers sent at once (default 100)"
    )
    parser.add_argument(
        "--burst-rounds",
        type=int,
        default=3,
        help="bursts per system, alternating (default 3; the median total is reported)",
    )
    parser.add_argument(
        "--waiting",
        type=int,
        default=1000,
        help="runs waiting at a gate for the memory figure (default 1000)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=65.0,
        help="seconds after the last waiting run before memory is read (default 65: past Restate's 1-minute inactivity timeout)",
    )
    parser.add_argument(
        "--pause", type=float, default=0.25, help="seconds between latency samples (default 0.25)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's scratch folder (logs, databases)"
    )
    args = parser.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        parser.error(
            f"--systems takes some of {','.join(SYSTEMS)}; got {','.join(sorted(unknown)) or 'none'}"
        )
    if (
        min(args.samples, args.burst, args.burst_rounds, args.waiting, args.gatehouse_max_bodies)
        < 1
    ):
        parser.error(
            "--samples, --burst, --burst-rounds, --waiting and --gatehouse-max-bodies must be at least 1"
        )
    return args


def gatehouse_binary(args) -> Path | None:
    """The binary to measure, built first if it is the default and missing."""
    if not any(g in args.systems for g in GATEHOUSES):
        return None
    default = args.gatehouse_bin is None
    return ensure_gatehouse(
        (args.gatehouse_bin or REPO / "target/release/gatehouse").resolve(), default
    )


def make_systems(args, binary: Path | None, scratch: Path, procs: Processes) -> list[System]:
    deliveries = Deliveries()
    peers_dir = args.peers_dir.resolve()
    made = {
        "gatehouse": lambda: Gatehouse(
            scratch, procs, deliveries, binary, True, args.gatehouse_max_bodies
        ),
        "gatehouse-notoken": lambda: Gatehouse(
            scratch, procs, deliveries, binary, False, args.gatehouse_max_bodies
        ),
        "gatehouse-distributed": lambda: GatehouseDistributed(
            scratch, procs, deliveries, binary, args.gatehouse_max_bodies
        ),
        "n8n": lambda: N8n(scratch, procs, deliveries, peers_dir),
        "restate": lambda: Restate(scratch, procs, deliveries, peers_dir),
    }
    # A fixed order; the measurements rotate it.
    systems = [made[name]() for name in SYSTEMS if name in args.systems]
    if args.baseline_bin:
        baseline = args.baseline_bin.resolve()
        if not baseline.is_file():
            raise BenchError(f"--baseline-bin {baseline}: no such file")
        kind = DistributedBaseline if args.baseline_mode == "distributed" else Baseline
        systems.append(kind(scratch, procs, deliveries, baseline, args.gatehouse_max_bodies))
    return systems


def warm_up(systems: list[System], issues: Issues, pause: float) -> None:
    """Three samples of each flow per system, not recorded: JITs, caches, connections."""
    measure_trigger(systems, issues, 3, pause)
    measure_gate(systems, issues, 3, pause)


def measure_all(systems: list[System], args) -> dict:
    issues = Issues()
    say("warming up")
    warm_up(systems, issues, args.pause)
    say(f"trigger → first step: {args.samples} samples per system, round-robin")
    trigger = measure_trigger(systems, issues, args.samples, args.pause)
    say(f"gate decision → next step: {args.samples} samples per system, round-robin")
    gate = measure_gate(systems, issues, args.samples, args.pause)
    say(f"{args.burst} triggers at once: {args.burst_rounds} rounds per system, alternating")
    burst = measure_burst(systems, issues, args.burst, args.burst_rounds, settle=3.0)
    say(
        f"memory with {args.waiting:,} runs waiting at a gate (read {args.settle:.0f} s after the last)"
    )
    memory = measure_memory(systems, issues, args.waiting, args.settle)
    return summarize(trigger, gate, burst, memory, [s.name for s in systems])


def say(what: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {what} ...", flush=True)


def run(args) -> dict:
    """Starts the systems, measures, reports; stops every process it started, whatever
    happens. The scratch folder is kept after a failure (or with --keep)."""
    binary = gatehouse_binary(args)
    args.peers_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=args.peers_dir))
    procs = Processes()
    began = time.monotonic()
    ok = False
    systems: list[System] = []
    try:
        systems += make_systems(args, binary, scratch, procs)
        for system in systems:
            say(f"starting {system.title}")
            system.start()
        summary = measure_all(systems, args)
        summary.update(
            date=datetime.date.today().isoformat(),
            cores=os.cpu_count(),
            samples=args.samples,
            burst=args.burst,
            burst_rounds=args.burst_rounds,
            gatehouse_max_unverified_bodies=args.gatehouse_max_bodies,
            waiting=args.waiting,
            titles={s.name: s.title for s in systems},
            duration_s=round(time.monotonic() - began),
        )
        summary["targets"] = targets(summary["ratios"], args.waiting)
        print_report(summary, summary["titles"])
        print(
            f"\n{len(systems)} systems measured in {summary['duration_s']} s on {os.cpu_count()} cores"
        )
        ok = True
        return summary
    finally:
        procs.stop_all()
        for system in systems:
            system.clean_up()
        if ok and not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"scratch folder kept: {scratch}", file=sys.stderr)


def interrupted(signum, frame) -> None:
    """SIGTERM unwinds like Ctrl-C, so every process started is stopped."""
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    if argv[:1] == ["github-stub"]:
        serve_github_stub(int(argv[1]))
        return 0
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    try:
        summary = run(args)
    except BenchError as e:
        print(f"peers benchmark: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("peers benchmark: interrupted", file=sys.stderr)
        return 130
    target = os.environ.get("GATEHOUSE_BENCH_JSON")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2) + "\n")
        print(f"figures written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
