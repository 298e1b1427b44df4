"""Checks of deploy/ that need more than a schema; run by deploy/validate.sh in its venv.

    python validate.py k8s DIR|--rendered FILE [--kube-version V]... [--gatehouse BIN]
    python validate.py compose FILE [--gatehouse BIN]
    python validate.py dockerfile FILE CARGO_TOML
    python validate.py toml FILE...

Prints one line per file or resource checked and every problem found; exits 1 on any
problem. Nothing here touches the network: the Kubernetes schemas come with the
kubernetes-validate package.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

# Objects the manifests refer to that the operator creates (deploy/README.md).
EXTERNAL = {("Secret", "gatehouse-secrets"), ("Secret", "gatehouse-admin-token"),
            ("ConfigMap", "gatehouse-sops")}
UID = 10001
# The Secret holding the admin token every ingest replica shares, and its key.
ADMIN_TOKEN_SECRET = "gatehouse-admin-token"
ADMIN_TOKEN_KEY = "admin.token"

problems: list[str] = []


def problem(where: str, message: str) -> None:
    problems.append(f"{where}: {message}")
    print(f"  FAIL {where}: {message}", flush=True)


def ok(message: str) -> None:
    print(f"  ok   {message}", flush=True)


def load_all(path: Path) -> list:
    try:
        with path.open() as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        problem(str(path), f"does not parse: {e}")
        return []


# --- the gatehouse binary ------------------------------------------------------------------

def check_args(binary: str | None, where: str, args: list[str]) -> None:
    """The binary accepts these arguments (clap checks them before acting on --help)."""
    if not binary:
        return
    run = subprocess.run([binary, *args, "--help"], env=clean_env({}), capture_output=True,
                         text=True, timeout=60)
    if run.returncode != 0:
        problem(where, f"`gatehouse {' '.join(args)}` is refused by {binary}: "
                       f"{(run.stderr or run.stdout).strip().splitlines()[:3]}")
    else:
        ok(f"{where}: gatehouse {' '.join(args)} is a valid command")


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tempfile.gettempdir()}
    env.update(extra)
    return env


def config_check(binary: str | None, where: str, toml_text: str, env: dict[str, str]) -> None:
    """`gatehouse config check` accepts the file with the environment the deployment gives
    it, with a placeholder for each secret it names."""
    if not binary:
        return
    env = dict(env)
    for name in re.findall(r'env\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)"', strip_toml_comments(toml_text)):
        env.setdefault(name, "placeholder")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp, "gatehouse.toml")
        config.write_text(toml_text)
        env = {k: v.replace("@DATA@", tmp) for k, v in env.items()}
        run = subprocess.run([binary, "--config", str(config), "config", "check"],
                             env=clean_env(env), cwd=tmp, capture_output=True, text=True,
                             timeout=60)
    if run.returncode != 0:
        problem(where, "gatehouse config check: " + (run.stderr or run.stdout).strip())
    else:
        ok(f"{where}: gatehouse config check accepts it")


def strip_toml_comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


DEPLOY_ENV = {
    "GATEHOUSE_DATABASE_URL": "postgres://gatehouse:placeholder@postgres:5432/gatehouse",
    "GATEHOUSE_NATS_URL": "nats://nats:4222",
    "GATEHOUSE_LISTEN": "0.0.0.0:8080",
    "GATEHOUSE_DATA_DIR": "@DATA@",
}


# --- Kubernetes -----------------------------------------------------------------------------

def pod_spec(doc: dict) -> dict | None:
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return (spec.get("template") or {}).get("spec") or {}
    if kind == "CronJob":
        return (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec")
    return None


def pod_labels(doc: dict) -> dict:
    return ((doc.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def check_pod(where: str, doc: dict, spec: dict, defined: set, binary: str | None) -> None:
    if spec.get("automountServiceAccountToken") is not False:
        problem(where, "automountServiceAccountToken must be false")
    if spec.get("enableServiceLinks") is not False:
        # Service links would add GATEHOUSE_INGEST_PORT and the like for the gatehouse-*
        # Services, which gatehouse reads as (unknown) configuration keys and stops.
        problem(where, "enableServiceLinks must be false (GATEHOUSE_* service variables)")
    sc = spec.get("securityContext") or {}
    if sc.get("runAsNonRoot") is not True or sc.get("runAsUser") != UID:
        problem(where, f"pod securityContext needs runAsNonRoot: true and runAsUser: {UID}")
    if (sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        problem(where, "pod securityContext needs seccompProfile RuntimeDefault")
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        problem(where, "host namespaces are not allowed")
    volumes = {}
    for v in spec.get("volumes") or []:
        volumes[v["name"]] = v
        if "hostPath" in v:
            problem(where, f"volume {v['name']}: hostPath is not allowed (no Docker socket, no host files)")
        for kind, key, field in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName"),
                                 ("PersistentVolumeClaim", "persistentVolumeClaim", "claimName")):
            if key in v:
                name = v[key].get(field)
                if (kind, name) not in defined and (kind, name) not in EXTERNAL:
                    problem(where, f"volume {v['name']} refers to {kind} {name}, which is defined nowhere")
    if spec.get("serviceAccountName") and ("ServiceAccount", spec["serviceAccountName"]) not in defined:
        problem(where, f"ServiceAccount {spec['serviceAccountName']} is defined nowhere")
    for c in spec.get("containers") or []:
        cw = f"{where} container {c.get('name')}"
        csc = c.get("securityContext") or {}
        if csc.get("allowPrivilegeEscalation") is not False:
            problem(cw, "allowPrivilegeEscalation must be false")
        if csc.get("readOnlyRootFilesystem") is not True:
            problem(cw, "readOnlyRootFilesystem must be true")
        if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
            problem(cw, "capabilities must drop ALL")
        if csc.get("privileged"):
            problem(cw, "privileged is not allowed")
        res = c.get("resources") or {}
        for part in ("requests", "limits"):
            for r in ("cpu", "memory"):
                if r not in (res.get(part) or {}):
                    problem(cw, f"resources.{part}.{r} is missing")
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
        for m in mounts.values():
            if m["name"] not in volumes:
                problem(cw, f"volumeMount {m['mountPath']} names volume {m['name']}, which the pod does not have")
            if "docker.sock" in m["mountPath"]:
                problem(cw, "the Docker socket must not be mounted")
        if "/tmp" not in mounts:
            problem(cw, "a read-only root filesystem needs a volume on /tmp")
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {})
            for kind, key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                if key in ref and (kind, ref[key]["name"]) not in defined | EXTERNAL:
                    problem(cw, f"env {e['name']} refers to {kind} {ref[key]['name']}, defined nowhere")
        for src in c.get("envFrom") or []:
            for kind, key in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                if key in src and (kind, src[key]["name"]) not in defined | EXTERNAL:
                    problem(cw, f"envFrom refers to {kind} {src[key]['name']}, defined nowhere")
        if doc.get("kind") == "Deployment":
            probes = {p: ((c.get(p) or {}).get("httpGet") or {}).get("path")
                      for p in ("livenessProbe", "readinessProbe")}
            if probes != {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}:
                problem(cw, f"probes must be liveness /healthz and readiness /readyz, not {probes}")
        if c.get("image", "").split(":")[0].split("/")[-1] == "gatehouse":
            args = (c.get("command") or [None])[1:] + (c.get("args") or [])
            check_args(binary, cw, args)
            check_data_dir(cw, c, args, mounts, volumes)


def check_data_dir(where: str, container: dict, args: list, mounts: dict, volumes: dict) -> None:
    """No gatehouse pod needs a shared disk: artifacts and workspace checkpoints are in the
    blob store (NATS), so every data directory is an emptyDir, the pod's own scratch. Ingest
    gets admin.token from its Secret, or each replica would write its own at every start."""
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    data_dir = env.get("GATEHOUSE_DATA_DIR")
    if not data_dir:
        return
    mount = mounts.get(data_dir)
    if mount is None:
        problem(where, f"no volume on the data directory {data_dir} (GATEHOUSE_DATA_DIR): "
                       "mount an emptyDir there (the root filesystem is read-only)")
        return
    volume = volumes.get(mount["name"]) or {}
    if "emptyDir" not in volume:
        kind = next((k for k in volume if k != "name"), "unknown")
        problem(where, f"the data directory {data_dir} is on volume {mount['name']} ({kind}), "
                       "not an emptyDir: no pod needs a shared or persistent disk any more "
                       "(artifacts and workspace checkpoints are in NATS, [storage] blobs = "
                       "\"nats\"; a runner restores a run's workspace from its checkpoint)")
    elif args[-1:] == ["runner"]:
        limit = (volume.get("emptyDir") or {}).get("sizeLimit")
        if not limit:
            problem(where, f"the runner's data directory emptyDir {mount['name']} needs a "
                           "sizeLimit (it holds workspaces and grows)")
        else:
            ok(f"{where}: data directory {data_dir} on an emptyDir (sizeLimit {limit})")
    else:
        ok(f"{where}: data directory {data_dir} on an emptyDir")
    if args[-1:] == ["ingest"]:
        token = f"{data_dir.rstrip('/')}/admin.token"
        tm = mounts.get(token)
        tv = (volumes.get(tm["name"]) or {}) if tm else {}
        secret = tv.get("secret") or {}
        items = {i.get("path"): i.get("key") for i in secret.get("items") or []}
        key = items.get(tm.get("subPath")) if tm and items else (tm or {}).get("subPath")
        if (not tm or secret.get("secretName") != ADMIN_TOKEN_SECRET
                or key != ADMIN_TOKEN_KEY or tm.get("readOnly") is not True
                or secret.get("optional")):
            problem(where, f"ingest needs {token} from the Secret {ADMIN_TOKEN_SECRET} (key "
                           f"{ADMIN_TOKEN_KEY}, mounted by subPath, readOnly, not optional): "
                           "with its data directory on an emptyDir each replica would otherwise "
                           "write an admin token of its own at every start")
        else:
            ok(f"{where}: admin.token from the Secret {ADMIN_TOKEN_SECRET}")


def kustomization_files(directory: Path) -> list[Path]:
    """The resources kustomization.yaml lists; every manifest in the directory must be one."""
    kustomization = directory / "kustomization.yaml"
    listed = (load_all(kustomization) or [{}])[0].get("resources") or []
    present = sorted(p.name for p in directory.glob("*.y*ml") if p.name != "kustomization.yaml")
    for name in sorted(set(present) - set(listed)):
        problem(str(directory / name), "is not listed in kustomization.yaml resources")
    for name in listed:
        if not (directory / name).is_file():
            problem(str(kustomization), f"lists {name}, which does not exist")
    ok(f"{kustomization.name} lists every manifest in {directory}")
    return [directory / n for n in listed if (directory / n).is_file()]


def check_k8s(files: list[Path], versions: list[str], binary: str | None) -> None:
    import kubernetes_validate.utils as kv

    docs: list[tuple[str, dict]] = []
    for path in files:
        for doc in load_all(path):
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                problem(str(path), "a document without apiVersion and kind")
                continue
            where = f"{path.name} {doc['kind']}/{(doc.get('metadata') or {}).get('name')}"
            if (doc.get("metadata") or {}).get("namespace"):
                problem(where, "sets a namespace; the manifests are namespace-agnostic")
            for version in versions:
                try:
                    kv.validate(doc, version, strict=True)
                except kv.ValidationError as e:
                    problem(where, f"Kubernetes {version}: {e.message} (at {'.'.join(map(str, e.path))})")
                except kv.SchemaNotFoundError:
                    problem(where, f"Kubernetes {version} has no {doc['apiVersion']} {doc['kind']}")
                else:
                    ok(f"{where} is valid for Kubernetes {version}")
            docs.append((where, doc))

    defined = {(d["kind"], (d.get("metadata") or {}).get("name")) for _, d in docs}
    pods = [(w, d) for w, d in docs if pod_spec(d) is not None]
    for where, doc in pods:
        check_pod(where, doc, pod_spec(doc), defined, binary)
        sel = ((doc.get("spec") or {}).get("selector") or {}).get("matchLabels")
        if sel is not None and not matches(sel, pod_labels(doc)):
            problem(where, "spec.selector does not match the pod template's labels")
    for where, doc in docs:
        spec = doc.get("spec") or {}
        if doc["kind"] == "Service":
            targets = [d for _, d in pods if matches(spec.get("selector"), pod_labels(d))]
            if not targets:
                problem(where, "its selector matches no pod")
            for port in spec.get("ports") or []:
                tp = port.get("targetPort")
                if isinstance(tp, str) and not any(
                        any(p.get("name") == tp for c in pod_spec(d).get("containers", []) for p in c.get("ports") or [])
                        for d in targets):
                    problem(where, f"targetPort {tp} is a port name no selected pod has")
        if doc["kind"] in ("NetworkPolicy", "PodDisruptionBudget"):
            sel = (spec.get("podSelector") if doc["kind"] == "NetworkPolicy" else spec.get("selector")) or {}
            if not any(matches(sel.get("matchLabels"), pod_labels(d)) for _, d in pods):
                problem(where, "its selector matches no pod")
        if doc["kind"] == "PersistentVolumeClaim" and "ReadWriteMany" in (spec.get("accessModes") or []):
            problem(where, "a ReadWriteMany PersistentVolumeClaim: no gatehouse pod shares a disk "
                           "any more (artifacts and workspace checkpoints are in NATS, "
                           "[storage] blobs = \"nats\"); remove it")
        if doc["kind"] == "ConfigMap" and "gatehouse.toml" in (doc.get("data") or {}):
            text = doc["data"]["gatehouse.toml"]
            try:
                check_blobs(where, tomllib.loads(text))
                ok(f"{where}: gatehouse.toml is TOML")
            except tomllib.TOMLDecodeError as e:
                problem(where, f"gatehouse.toml: {e}")
            config_check(binary, where, text, DEPLOY_ENV)


def check_blobs(where: str, config: dict) -> None:
    """The processes share no disk, so the blob store must be the one they all reach."""
    blobs = (config.get("storage") or {}).get("blobs")
    if blobs != "nats":
        problem(where, f"[storage] blobs is {blobs!r}: set it to \"nats\" explicitly; the "
                       "services share no disk, so ingest, the notifier and the other runners "
                       "read artifacts and workspace checkpoints from the NATS object store")
    else:
        ok(f"{where}: [storage] blobs = \"nats\"")


# --- Compose --------------------------------------------------------------------------------

def interpolate(value: str) -> str:
    """Compose's ${VAR:-default} with the defaults (and ${VAR:?...} as a placeholder)."""
    value = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}", r"\1", value)
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(:?\?[^}]*)?\}", "VALUE", value)


def compose_data_dirs(path: Path, services: dict, secrets: dict) -> None:
    """Each runner has a data directory of its own, bind-mounted at its host path (a Docker
    sandbox mounts a run's workspace by that path), which no other service mounts; ingest
    gets admin.token as a file, the same for every ingest container."""
    runner_dirs: dict[str, str] = {}
    binds: dict[str, list[tuple[str, str]]] = {}
    for name, svc in services.items():
        for v in svc.get("volumes") or []:
            text = interpolate(v) if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}"
            parts = text.split(":")
            if len(parts) >= 2 and parts[0].startswith("/"):
                binds.setdefault(name, []).append((parts[0].rstrip("/"), parts[1].rstrip("/")))
    for name, svc in services.items():
        env = svc.get("environment") or {}
        if "gatehouse" not in str(svc.get("image", "")) or not isinstance(env, dict):
            continue
        where = f"{path.name} service {name}"
        data_dir = interpolate(str(env.get("GATEHOUSE_DATA_DIR") or "")).rstrip("/")
        if name.startswith("runner"):
            if not data_dir:
                problem(where, "a runner needs GATEHOUSE_DATA_DIR, a directory of its own")
                continue
            other = next((r for r, d in runner_dirs.items() if d == data_dir), None)
            if other:
                problem(where, f"shares its data directory {data_dir} with {other}: each runner "
                               "needs its own (its workspaces are its own copies)")
            runner_dirs[name] = data_dir
            if (data_dir, data_dir) not in binds.get(name, []):
                problem(where, f"its data directory {data_dir} must be a bind mount of the same "
                               "path on the host (a Docker sandbox mounts workspaces by host path)")
            else:
                ok(f"{where}: data directory {data_dir}, the same path on the host")
        if name == "ingest" or name.startswith("ingest"):
            token = f"{data_dir or '/var/lib/gatehouse'}/admin.token"
            targets = {(s.get("target") if isinstance(s, dict) else None) or f"/run/secrets/{s}"
                       for s in svc.get("secrets") or []}
            targets = {interpolate(t) for t in targets}
            mounted = any(t == token for _, t in binds.get(name, []))
            if token not in targets and not mounted:
                problem(where, f"ingest needs {token} as a file (a secret or a read-only bind "
                               "mount): on a tmpfs it would write a new admin token at every start")
            else:
                ok(f"{where}: admin.token given as a file")
    for name, mounts in binds.items():
        if name.startswith("runner"):
            continue
        for source, _ in mounts:
            for runner, d in runner_dirs.items():
                if d == source or d.startswith(source + "/"):
                    problem(f"{path.name} service {name}", f"mounts {source}, which holds {runner}'s "
                            "data directory: no service shares a runner's disk")
    for name, secret in (secrets or {}).items():
        if isinstance(secret, dict) and "file" in secret:
            ok(f"{path.name} secret {name}: from {interpolate(str(secret['file']))} (create it first)")


def check_compose(path: Path, binary: str | None) -> None:
    print(f"Compose file {path} (beyond the Compose specification schema)")
    docs = load_all(path)
    if not docs:
        return
    compose = docs[0]
    services = compose.get("services") or {}
    compose_data_dirs(path, services, compose.get("secrets") or {})
    for name, svc in services.items():
        where = f"{path.name} service {name}"
        volumes = [interpolate(v) if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}"
                   for v in svc.get("volumes") or []]
        for v in volumes:
            source = v.split(":", 1)[0]
            if source.startswith(".") and not (path.parent / source).exists():
                problem(where, f"bind mount source {source} does not exist next to {path.name}")
        sock = [v for v in volumes if "docker.sock" in v]
        if sock and not name.startswith("runner"):
            problem(where, "mounts the Docker socket; only the runners may")
        if name.startswith("runner") and sock:
            ok(f"{where}: the Docker socket is mounted (runner)")
        if svc.get("privileged"):
            problem(where, "privileged is not allowed")
        for dep in svc.get("depends_on") or {}:
            if dep not in services:
                problem(where, f"depends on {dep}, which is not a service")
        if "gatehouse" in str(svc.get("image", "")):
            command = svc.get("command") or []
            if not isinstance(command, list) or not command:
                problem(where, "a gatehouse service needs command as a list")
            else:
                check_args(binary, where, command)
            env = svc.get("environment") or {}
            if isinstance(env, dict):
                for key in ("GATEHOUSE_DATABASE_URL", "GATEHOUSE_NATS_URL", "GATEHOUSE_LISTEN"):
                    if key not in env:
                        problem(where, f"environment lacks {key}")
    for name, cfg in (compose.get("configs") or {}).items():
        if "file" in cfg:
            file = (path.parent / cfg["file"]).resolve()
            if not file.is_file():
                problem(f"{path.name} config {name}", f"{cfg['file']} does not exist")
                continue
            text = file.read_text()
            try:
                check_blobs(f"{path.name} config {name} ({cfg['file']})", tomllib.loads(text))
                ok(f"{path.name} config {name}: {cfg['file']} is TOML")
            except tomllib.TOMLDecodeError as e:
                problem(f"{path.name} config {name}", f"{cfg['file']}: {e}")
                continue
            config_check(binary, f"{path.name} config {name} ({cfg['file']})", text, DEPLOY_ENV)


# --- Dockerfile and TOML --------------------------------------------------------------------

def check_dockerfile(path: Path, cargo_toml: Path) -> None:
    print(f"Dockerfile {path} (against {cargo_toml})")
    text = path.read_text()
    want = tomllib.loads(cargo_toml.read_text())["workspace"]["package"]["rust-version"]
    m = re.search(r"^FROM\s+rust:(\d+\.\d+)", text, re.M)
    if not m:
        problem(str(path), "no `FROM rust:X.Y...` builder stage")
    elif tuple(map(int, m.group(1).split("."))) < tuple(map(int, want.split(".")[:2])):
        problem(str(path), f"builds with Rust {m.group(1)}, the workspace needs {want}")
    else:
        ok(f"{path.name}: builder rust:{m.group(1)} satisfies rust-version {want}")
    for needle, what in ((r"--locked", "cargo build --locked"), (r"^USER\s+10001", "USER 10001"),
                         (r'^ENTRYPOINT \["gatehouse"\]', 'ENTRYPOINT ["gatehouse"]')):
        if not re.search(needle, text, re.M):
            problem(str(path), f"missing {what}")
        else:
            ok(f"{path.name}: {what}")


def check_toml(paths: list[Path]) -> None:
    print("TOML files")
    for path in paths:
        try:
            tomllib.loads(path.read_text())
            ok(f"{path} is TOML")
        except (OSError, tomllib.TOMLDecodeError) as e:
            problem(str(path), str(e))


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    k = sub.add_parser("k8s", help="a kustomization directory, or (--rendered) one YAML stream")
    k.add_argument("path", type=Path)
    k.add_argument("--rendered", action="store_true")
    k.add_argument("--kube-version", action="append", default=[])
    k.add_argument("--gatehouse")
    c = sub.add_parser("compose")
    c.add_argument("file", type=Path)
    c.add_argument("--gatehouse")
    d = sub.add_parser("dockerfile")
    d.add_argument("file", type=Path)
    d.add_argument("cargo_toml", type=Path)
    t = sub.add_parser("toml")
    t.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    if getattr(args, "gatehouse", None):
        binary = Path(args.gatehouse).resolve()
        if not os.access(binary, os.X_OK):
            print(f"error: the gatehouse binary {args.gatehouse} is not executable", file=sys.stderr)
            return 2
        args.gatehouse = str(binary)

    if args.what == "k8s":
        import kubernetes_validate.utils as kv
        versions = args.kube_version or [kv.latest_version()]
        versions = [kv.latest_version() if v == "latest" else v for v in versions]
        if args.rendered:
            print(f"Kubernetes objects rendered in {args.path} "
                  f"(schemas: Kubernetes {', '.join(versions)}, strict)")
            files = [args.path]
        else:
            print(f"Kubernetes manifests in {args.path} "
                  f"(schemas: Kubernetes {', '.join(versions)}, strict)")
            files = kustomization_files(args.path)
        check_k8s(files, versions, args.gatehouse)
    elif args.what == "compose":
        check_compose(args.file, args.gatehouse)
    elif args.what == "dockerfile":
        check_dockerfile(args.file, args.cargo_toml)
    else:
        check_toml(args.files)
    if problems:
        print(f"  {len(problems)} problem(s)")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
