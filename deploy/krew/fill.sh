#!/usr/bin/env bash
# Writes the krew manifest of a release to stdout: deploy/krew/clusterdns.yaml with its
# @...@ placeholders filled from the release's archives (see deploy/krew/README.md).
#
#   deploy/krew/fill.sh --version v0.2.0 --url https://HOST/releases/v0.2.0 \
#       --homepage https://HOST/clusterdns --archives DIR > clusterdns.yaml
#
# For each platform of the manifest (linux amd64 and arm64), DIR must hold
# clusterdns-VERSION-OS-ARCH.tar.gz with the binary `clusterdns` at its top; the platform's
# uri becomes URL/clusterdns-VERSION-OS-ARCH.tar.gz and its sha256 the archive's.
set -euo pipefail

usage() {
    echo "usage: $0 --version vX.Y.Z --url BASE_URL --homepage URL --archives DIR" >&2
    exit 2
}
fail() {
    echo "fill.sh: $*" >&2
    exit 1
}

version="" url="" homepage="" archives=""
while (($#)); do
    case "$1" in
    --version) version="${2-}" ;;
    --url) url="${2-}" ;;
    --homepage) homepage="${2-}" ;;
    --archives) archives="${2-}" ;;
    *) usage ;;
    esac
    (($# >= 2)) || usage
    shift 2
done
[[ -n $version && -n $url && -n $homepage && -n $archives ]] || usage
# krew reads the version as semantic versioning with a leading v.
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] ||
    fail "--version $version: expected vMAJOR.MINOR.PATCH (krew's form), such as v0.2.0"
[[ -d $archives ]] || fail "--archives $archives: not a directory"
url="${url%/}"
# The values go into double-quoted YAML strings.
for value in "$url" "$homepage"; do
    [[ $value != *[\"\\]* && $value != *$'\n'* ]] || fail "$value: a quote, backslash or newline in a URL"
done

manifest="$(dirname "$0")/clusterdns.yaml"
text=$(<"$manifest")
text=${text//@VERSION@/"$version"}
text=${text//@HOMEPAGE@/"$homepage"}

# The platforms the manifest names, from its uri placeholders: linux_amd64, linux_arm64.
platforms=$(grep -o '@URI_[a-z0-9]*_[a-z0-9]*@' "$manifest" | sed 's/^@URI_//; s/@$//' | sort -u)
[[ -n $platforms ]] || fail "$manifest: no @URI_OS_ARCH@ placeholder"
for platform in $platforms; do
    os=${platform%_*}
    arch=${platform#*_}
    name="clusterdns-$version-$os-$arch.tar.gz"
    archive="$archives/$name"
    [[ -f $archive ]] || fail "$archive: no archive for $os/$arch"
    # krew runs the platform's bin from the unpacked archive: it must be there.
    tar -tzf "$archive" | sed 's|^\./||' | grep -qx clusterdns ||
        fail "$archive: no file clusterdns at the top of the archive"
    sha=$(sha256sum "$archive" | cut -d' ' -f1)
    text=${text//@URI_${platform}@/"$url/$name"}
    text=${text//@SHA256_${platform}@/"$sha"}
done

if grep -q '@[A-Za-z0-9_]*@' <<<"$text"; then
    fail "placeholders left unfilled: $(grep -o '@[A-Za-z0-9_]*@' <<<"$text" | sort -u | tr '\n' ' ')"
fi
printf '%s\n' "$text"
