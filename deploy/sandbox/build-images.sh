#!/usr/bin/env bash
# Builds the images Gatehouse's Docker sandbox runs scripts in, without any registry:
#   gatehouse-sandbox:busybox (also tagged gatehouse-sandbox:latest)
#     FROM scratch: a static busybox, root and nobody (65534), /tmp, the host's CA bundle.
#   gatehouse-sandbox:git (with --with-git)
#     a minimal Debian root (debootstrap --variant=minbase) with git and ca-certificates.
#   gatehouse-sandbox:agents (with --with-agents)
#     the same Debian root with git, ca-certificates, bash and Node.js, the agent CLIs
#     (Claude Code, Codex) at the versions pinned in agent-clis.env next to this script,
#     npm-installed on the host (the image build needs no network), and a user `agent`
#     (uid 1000, HOME /home/agent) the image runs as. Its labels carry the CLI versions.
# Re-running it is safe: unchanged inputs give the same busybox image (layer cache), and an
# agents image whose labels already name the pinned versions is kept (--rebuild forces it).
set -euo pipefail

usage() {
    echo "usage: $0 [--with-git] [--with-agents [--rebuild]] [--suite SUITE] [--mirror URL]" >&2
    exit 2
}

with_git=false
with_agents=false
rebuild=false
suite=stable
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
    case "$1" in
        --with-git) with_git=true ;;
        --with-agents) with_agents=true ;;
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

# The labels of the agents image that name what is in it; an image with the same ones is
# not rebuilt.
agents_labels() {
    printf '%s\n' \
        "org.gatehouse.claude-code.version=$CLAUDE_CODE_VERSION" \
        "org.gatehouse.codex.version=$CODEX_VERSION" \
        "org.gatehouse.debian.suite=$suite"
}

build_agents() {
    local tag=gatehouse-sandbox:agents pins
    pins=$(dirname "${BASH_SOURCE[0]}")/agent-clis.env
    # NAME=VALUE lines only (deploy/validate.sh runs shellcheck without following it).
    # shellcheck disable=SC1090,SC1091
    source "$pins"
    : "${CLAUDE_CODE_VERSION:?not set in $pins}" "${CODEX_VERSION:?not set in $pins}"
    local wanted current
    wanted=$(agents_labels | sort)
    current=$(docker image inspect --format \
        '{{range $k, $v := .Config.Labels}}{{$k}}={{$v}}{{println}}{{end}}' "$tag" 2> /dev/null \
        | grep '^org\.gatehouse\.' | sort || true)
    if ! $rebuild && [ "$current" = "$wanted" ]; then
        echo "$tag is up to date (Claude Code $CLAUDE_CODE_VERSION, Codex $CODEX_VERSION); --rebuild forces it"
        return
    fi
    command -v npm > /dev/null || apt_install npm

    local root=$work/agents
    debian_root "$root" git,ca-certificates,bash,nodejs
    echo "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and @openai/codex@$CODEX_VERSION"
    # On the host, into the root: the image build has no network. Claude Code's postinstall
    # copies its native binary (glibc, as in the root) over its placeholder. npm's cache is
    # the build's own, so the downloads (~300 MB) do not stay on the host.
    npm install --global --prefix "$root/usr/local" --cache "$work/npm-cache" \
        --no-audit --no-fund --no-update-notifier \
        "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" \
        > "$work/npm.log" 2>&1 || {
        tail -n 30 "$work/npm.log" >&2
        exit 1
    }
    rm -rf "$work/npm-cache"
    # Claude Code refuses some flags as root: the image runs as `agent`.
    chroot "$root" useradd --uid 1000 --user-group --create-home --shell /bin/bash agent

    local changes=('USER agent' 'WORKDIR /home/agent') label
    while read -r label; do
        changes+=("LABEL $label")
    done < <(agents_labels)
    import_root "$root" "$tag" "${changes[@]}"
    rm -rf "$root"
    local versions
    versions=$(docker run --rm --network none "$tag" sh -c 'claude --version; codex --version') || {
        echo "$tag: the CLIs do not start" >&2
        exit 1
    }
    echo "built $tag ($(docker image inspect --format '{{.Id}}' "$tag")) from Debian $suite: ${versions//$'\n'/, }"
}

build_busybox
if $with_git; then
    build_git
fi
if $with_agents; then
    build_agents
fi
