#!/usr/bin/env bash
# Builds the images Gatehouse's Docker sandbox runs scripts in, without any registry:
#   gatehouse-sandbox:busybox (also tagged gatehouse-sandbox:latest)
#     FROM scratch: a static busybox, root and nobody (65534), /tmp, the host's CA bundle.
#   gatehouse-sandbox:git (with --with-git)
#     a minimal Debian root (debootstrap --variant=minbase) with git and ca-certificates.
# Re-running it is safe: unchanged inputs give the same busybox image (layer cache).
set -euo pipefail

usage() {
    echo "usage: $0 [--with-git] [--suite SUITE] [--mirror URL]" >&2
    exit 2
}

with_git=false
suite=stable
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
    case "$1" in
        --with-git) with_git=true ;;
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

build_git() {
    command -v debootstrap > /dev/null || apt_install debootstrap
    local root=$work/debian
    echo "debootstrapping Debian $suite (minbase, git, ca-certificates) from $mirror"
    debootstrap --variant=minbase --include=git,ca-certificates "$suite" "$root" "$mirror" \
        > "$work/debootstrap.log" 2>&1 || {
        tail -n 30 "$work/debootstrap.log" >&2
        exit 1
    }
    # Package caches and lists are not needed to run scripts.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/*
    chmod 1777 "$root/tmp"
    local previous
    previous=$(docker image inspect --format '{{.Id}}' gatehouse-sandbox:git 2> /dev/null || true)
    tar --numeric-owner -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
        --change 'CMD ["sh"]' \
        - gatehouse-sandbox:git > /dev/null
    # An import is never cached: the image it replaces would linger untagged.
    if [ -n "$previous" ]; then
        docker image rm "$previous" > /dev/null 2>&1 || true
    fi
    echo "built gatehouse-sandbox:git ($(docker image inspect --format '{{.Id}}' gatehouse-sandbox:git)) from Debian $suite"
}

build_busybox
if $with_git; then
    build_git
fi
