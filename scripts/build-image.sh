#!/usr/bin/env bash
# Builds Tidal's OCI image offline from executables already built, and runs it once.
#
#   scripts/build-image.sh [--bin-dir DIR] [--out DIR] [--image NAME:TAG] [--no-archive] [--no-install]
#
# The Dockerfile needs a base image from a registry; this needs none. The image
# holds tidal, tidal-agent and tidal-device-plugin (debug info stripped), the
# https module they load on demand (/usr/local/lib/tidal), every shared library
# `ldd` finds for them, /etc/passwd and /etc/group with the
# non-root user tidal (65532), the CA bundle (the kube-apiserver client speaks
# TLS) and /tmp: what the Dockerfile's debian:12-slim stage gives them, minus the
# rest of Debian. umoci writes it as an OCI layout without a daemon; skopeo
# converts it to a docker-archive for `kind load image-archive`.
#
# The image is then run once, and each executable's --version must print what
# the build's does: with podman when podman can run containers here, and always
# from the unpacked root filesystem under chroot, as the user and with the
# entrypoint the image's config names.
#
# The name and tag come from deploy/workloads/kustomization.yaml (the manifests' single
# image setting), whose tag must be VERSION; --image overrides both.
# Writes OUT/oci (OCI layout, tag = the image's tag) and OUT/NAME-TAG.tar
# (docker-archive). Exit 0 when the image was built and printed the right
# versions, 77 (skipped) when umoci is missing and cannot be installed or when
# not run as root, 1 otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

bin_dir=$repo/build/release/src/cli
out=$repo/build/image
image=""
archive=1
install=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --no-archive) archive=0; shift ;;
    --no-install) install=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
# Paths given are the caller's; the rest is relative to the repository.
bin_dir=$(realpath -m -- "$bin_dir")
out=$(realpath -m -- "$out")
cd "$repo"

say() { echo "build-image: $*"; }
die() { echo "build-image: FAILED: $*" >&2; exit 1; }

# The image's files belong to root and to 65532, and the run is a chroot.
if [ "$(id -u)" -ne 0 ]; then
  echo "build-image: SKIP: needs root (chown, chroot, podman's store); run it with sudo" >&2
  exit 77
fi

version=$(head -n1 VERSION | tr -d '[:space:]')
[ -n "$version" ] || die "VERSION is empty"

# The manifests' image setting: deploy/workloads/kustomization.yaml maps the name
# every Tidal container carries (ghcr.io/tidal-sched/tidal) to NAME:TAG.
if [ -z "$image" ]; then
  image=$(python3 - <<'EOF'
import sys, yaml
k = yaml.safe_load(open("deploy/workloads/kustomization.yaml"))
for i in k.get("images") or []:
    if i.get("name") == "ghcr.io/tidal-sched/tidal":
        print(f'{i.get("newName", i["name"])}:{i.get("newTag", "")}')
        sys.exit(0)
sys.exit("deploy/workloads/kustomization.yaml has no images entry for ghcr.io/tidal-sched/tidal")
EOF
  ) || die "cannot read the image setting of deploy/workloads/kustomization.yaml"
  [ "${image##*:}" = "$version" ] ||
    die "deploy/workloads/kustomization.yaml sets the image $image but VERSION is $version; run:" \
        "(cd deploy/workloads && kustomize edit set image ghcr.io/tidal-sched/tidal=${image%:*}:$version)"
fi
name=${image%:*}
tag=${image##*:}
if [ -z "$name" ] || [ -z "$tag" ] || [ "$name" = "$image" ]; then die "--image wants NAME:TAG, not $image"; fi

# The tools (scripts/install-deps.sh image). Only umoci is indispensable.
if [ "$install" -eq 1 ]; then
  scripts/install-deps.sh image || say "installing the image tools failed; going on with what is installed"
fi
if ! command -v umoci >/dev/null 2>&1; then
  echo "build-image: SKIP: umoci is not installed and could not be installed" \
       "(apt-get install umoci; scripts/install-deps.sh image)" >&2
  exit 77
fi
[ -f /etc/ssl/certs/ca-certificates.crt ] ||
  die "/etc/ssl/certs/ca-certificates.crt is missing (apt-get install ca-certificates)"

bins=(tidal tidal-agent tidal-device-plugin)
declare -A expected
for b in "${bins[@]}"; do
  [ -x "$bin_dir/$b" ] ||
    die "$bin_dir/$b is missing; build it: cmake --build --preset release --target ${bins[*]}"
  expected[$b]=$("$bin_dir/$b" --version) || die "$bin_dir/$b --version failed"
  case "${expected[$b]}" in
    "$b $version"|"$b $version "*) ;;
    *) die "$bin_dir/$b --version prints '${expected[$b]}', not version $version (stale build?)" ;;
  esac
done

mkdir -p "$out"
# Never leave the image of an earlier run beside a failed one.
layout=$out/oci
tarball=$out/${name##*/}-$tag.tar
rm -rf "$layout" "$tarball"
work=$(mktemp -d "$out/.work.XXXXXX")
# podman's private store: its run root must be a short path (50 characters).
pw=$(mktemp -d -t tidal-image.XXXXXX)
cleanup() {
  # conmon starts `podman container cleanup` on the private store after each
  # container exits; wait for those (10 s at most) so that they do not recreate it.
  local _
  for _ in $(seq 50); do pgrep -f -- "$pw" >/dev/null || break; sleep 0.2; done
  rm -rf "$work" "$pw"
}
trap cleanup EXIT

# --- The root filesystem -----------------------------------------------------
rootfs=$work/rootfs
# Merged /usr, as in Debian 12: the executables' interpreter is /lib64/ld-linux-*.
mkdir -p "$rootfs"/usr/{bin,lib,lib64,sbin,local/bin} "$rootfs"/etc/ssl/certs "$rootfs"/home/tidal
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$rootfs/$d"; done
install -d -m 1777 "$rootfs/tmp"
chown 65532:65532 "$rootfs/home/tidal"

for b in "${bins[@]}"; do
  strip --strip-debug -o "$rootfs/usr/local/bin/$b" "$bin_dir/$b"
done
# The https module both tidal and tidal-agent load on their first https GET
# (http::Get looks in ../lib/tidal/ beside the executable).
tls_module=$bin_dir/tidal-https.so
[ -f "$tls_module" ] || die "$tls_module is missing; build it: cmake --build --preset release --target tidal_https"
mkdir -p "$rootfs/usr/local/lib/tidal"
strip --strip-debug -o "$rootfs/usr/local/lib/tidal/tidal-https.so" "$tls_module"

# Every library the loader resolves for them, at the path it resolves it to.
libs=$(for b in "${bins[@]}" tidal-https.so; do ldd "$bin_dir/$b"; done | awk '
  /not found/ { print "MISSING " $1; next }
  $2 == "=>" && $3 ~ /^\// { print $3; next }
  $1 ~ /^\// { print $1 }' | sort -u)
if grep -q '^MISSING' <<<"$libs"; then die "ldd cannot resolve: $(grep '^MISSING' <<<"$libs" | cut -d' ' -f2 | xargs)"; fi
nlibs=0
while read -r lib; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
  nlibs=$((nlibs + 1))
done <<<"$libs"

cp -L /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
# 65532 is the image's user; 65534 (nobody) is the agent DaemonSet's runAsUser.
cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
tidal:x:65532:65532:tidal:/home/tidal:/usr/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
tidal:x:65532:
EOF
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
# Debian's loader configuration and cache: libraries a runtime mounts into the
# container later (the NVIDIA container toolkit's libnvidia-ml) are found as on Debian.
multiarch=$(basename "$(dirname "$(grep -m1 '/libc\.so' <<<"$libs")")")
mkdir -p "$rootfs/etc/ld.so.conf.d"
echo 'include /etc/ld.so.conf.d/*.conf' >"$rootfs/etc/ld.so.conf"
echo /usr/local/lib >"$rootfs/etc/ld.so.conf.d/libc.conf"
printf '/usr/local/lib/%s\n/lib/%s\n/usr/lib/%s\n' "$multiarch" "$multiarch" "$multiarch" \
  >"$rootfs/etc/ld.so.conf.d/$multiarch.conf"
ldconfig -r "$rootfs"
say "root filesystem: ${bins[*]} from $bin_dir, $nlibs shared libraries, CA bundle, users tidal (65532) and nobody, $(du -sh "$rootfs" | cut -f1)"

# --- The Dockerfile's runtime stage installs the same libraries ----------------
# Its apt-get install must name the Debian package of every library found above
# (debian:12-slim has libc6 and libgcc-s1): a library linked in later fails here
# rather than in the first `docker build`, which CI cannot run.
needed=""
unknown=""
while read -r lib; do
  pkg=$( (dpkg -S "$lib" || dpkg -S "$(readlink -f "$lib")") 2>/dev/null | head -n1 | cut -d: -f1 || true)
  if [ -n "$pkg" ]; then needed+="$pkg"$'\n'; else unknown+=" $lib"; fi
done <<<"$libs"
[ -z "$unknown" ] || die "no Debian package ships$unknown; the Dockerfile cannot install it"
needed=$(sort -u <<<"$needed" | sed '/^$/d')
listed=$(python3 -c '
import re, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
runtime = text.split("FROM debian:12-slim", 1)[1]
for cmd in re.findall(r"apt-get install([^&\n]*)", runtime):
    print("\n".join(w for w in cmd.split() if not w.startswith("-")))
' Dockerfile | sort -u) || die "cannot read the runtime stage of Dockerfile"
missing=$(comm -23 <(grep -vxE 'libc6|libgcc-s1' <<<"$needed") <(echo "$listed") | xargs)
[ -z "$missing" ] ||
  die "Dockerfile: its runtime stage does not install $missing (packages of libraries the executables load)"
say "Dockerfile: its runtime stage installs the packages of all $nlibs libraries ($(wc -l <<<"$needed") packages)"

# --- The OCI image (umoci: no daemon, no registry) ---------------------------
arch=$(dpkg --print-architecture)
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci insert --image "$layout:$tag" "$rootfs" / >/dev/null
umoci config --image "$layout:$tag" --os linux --architecture "$arch" \
  --config.user 65532:65532 \
  --config.entrypoint /usr/local/bin/tidal --config.cmd --help \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.workingdir /home/tidal \
  --config.label "org.opencontainers.image.title=tidal" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.ref.name=$image"
umoci gc --layout "$layout"
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
say "OCI image $image: $layout (tag $tag, $arch, manifest $digest, $(du -sh "$layout" | cut -f1))"

if [ "$archive" -eq 1 ]; then
  if command -v skopeo >/dev/null 2>&1; then
    # Local transports only; no signature policy to consult.
    skopeo --insecure-policy copy --quiet "oci:$layout:$tag" "docker-archive:$tarball:$image"
    say "docker-archive: $tarball (kind load image-archive $tarball)"
  else
    say "no docker-archive: skopeo is not installed (apt-get install skopeo)"
    tarball=""
  fi
else
  tarball=""
fi

# --- Run it once ---------------------------------------------------------------
check() {  # check HOW BIN OUTPUT
  if [ "$3" != "${expected[$2]}" ]; then
    die "$1: $2 --version printed '$3', the build prints '${expected[$2]}'"
  fi
  say "$1: $2 --version -> $3"
}

# podman, on a private store (removed afterwards), with runc where installed
# (crun refuses hybrid cgroup hierarchies) and low rlimits (podman's defaults
# raise them, which a sandbox without CAP_SYS_RESOURCE refuses; --version needs
# few). Whether podman can run containers here at all is asked first with the
# image's own dynamic loader, which needs nothing else from the image: once that
# runs, a failing executable is the image's fault.
ran_podman=0
interp=$(grep -m1 '/ld-linux' <<<"$libs" || true)
if command -v podman >/dev/null 2>&1; then
  pod=(podman --root "$pw/root" --runroot "$pw/run" --storage-driver vfs
       --cgroup-manager cgroupfs --events-backend none)
  command -v runc >/dev/null 2>&1 && pod+=(--runtime "$(command -v runc)")
  run=(run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
  if [ -n "$tarball" ]; then
    loaded=$("${pod[@]}" load -q -i "$tarball" 2>&1) || loaded="FAILED $loaded"
  else
    loaded=$("${pod[@]}" pull -q "oci:$layout:$tag" 2>&1 && "${pod[@]}" tag "$("${pod[@]}" images -q | head -n1)" "$image" 2>&1) ||
      loaded="FAILED $loaded"
  fi
  case "$loaded" in FAILED*) die "podman cannot load the image: ${loaded#FAILED }" ;; esac
  if probe=$("${pod[@]}" "${run[@]}" --entrypoint "$interp" "$image" --version 2>&1); then
    user=$("${pod[@]}" image inspect --format '{{.Config.User}}' "$image")
    [ "$user" = "65532:65532" ] || die "podman: the image's user is '$user', not 65532:65532"
    got=$("${pod[@]}" "${run[@]}" "$image" --version 2>"$work/err") ||
      die "podman run $image --version: $got $(cat "$work/err")"
    check "podman run (user $user)" tidal "$got"
    # The DaemonSets name the other executables as the command: found on PATH.
    for b in tidal-agent tidal-device-plugin; do
      got=$("${pod[@]}" "${run[@]}" --entrypoint "$b" "$image" --version 2>"$work/err") ||
        die "podman run --entrypoint $b $image --version: $got $(cat "$work/err")"
      check "podman run (user $user)" "$b" "$got"
    done
    ran_podman=1
  else
    say "podman cannot run containers here ($(tail -n1 <<<"$probe")); checking under chroot only"
  fi
else
  say "podman is not installed; checking under chroot only"
fi

# chroot into the unpacked image: the user, entrypoint and PATH of its config.
umoci unpack --image "$layout:$tag" "$work/bundle" >/dev/null
read -r uid gid entry path < <(python3 - "$work/bundle/config.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))["process"]
env = dict(e.split("=", 1) for e in p["env"])
print(p["user"]["uid"], p["user"]["gid"], p["args"][0], env.get("PATH", ""))
EOF
)
[ "$uid:$gid" = "65532:65532" ] || die "the unpacked image runs as $uid:$gid, not 65532:65532"
chroot_bin=$(command -v chroot)  # env -i drops the PATH that finds it
got=$(env -i "PATH=$path" "$chroot_bin" --userspec="$uid:$gid" "$work/bundle/rootfs" "$entry" --version) ||
  die "chroot: $entry --version failed in the unpacked image"
check "chroot --userspec=$uid:$gid" tidal "$got"
for b in tidal-agent tidal-device-plugin; do
  got=$(env -i "PATH=$path" "$chroot_bin" --userspec="$uid:$gid" "$work/bundle/rootfs" "$b" --version) ||
    die "chroot: $b --version failed in the unpacked image"
  check "chroot --userspec=$uid:$gid" "$b" "$got"
done

# The https module resolves every library it needs (OpenSSL) inside the image.
got=$(env -i "$chroot_bin" "$work/bundle/rootfs" "$interp" --list /usr/local/lib/tidal/tidal-https.so 2>&1) ||
  die "chroot: the TLS module /usr/local/lib/tidal/tidal-https.so does not load: $got"
grep -q 'not found' <<<"$got" && die "chroot: the TLS module lacks libraries: $(grep 'not found' <<<"$got" | xargs)"
say "chroot: /usr/local/lib/tidal/tidal-https.so resolves $(grep -c '=>' <<<"$got") libraries"

if [ "$ran_podman" -eq 1 ]; then how="podman and chroot"; else how="chroot (podman did not run)"; fi
say "OK: $image built offline and run with $how; every --version matches the build"
