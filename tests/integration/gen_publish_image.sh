#!/usr/bin/env bash
# eqota-gen publish --image: a small merged-/usr image (a tar made here)
# with real packages (tarpkg.sh, and a base-files that ships bin as a
# symlink, as a repacked Debian 12 base-files does). Checked: the manifest is
# format 2 and its image object names the skeleton, the after components,
# the replaced and removed package paths; the components are packages of
# the release; the same packages without --image are still format 1 (and
# refused for bin, symlink vs folder, as before); a second release's
# changed components get deltas from the first's; `diff` between image
# releases tells components from packages, their bytes exactly as the
# repository's object and delta files give them. Refused, each naming the
# entry or package: a package named like a component, device nodes without
# --image-devices, a device node outside dev/, --image-devices alone.
# Usage: gen_publish_image.sh EQOTA_GEN SOURCE_DIR
set -Eeuo pipefail
gen=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
w=$(mktemp -d /tmp/eq-pubimg.XXXXXX)
cleanup() { rm -rf "$w"; }
trap cleanup EXIT
trap 'echo "gen_publish_image.sh: stopped by a failing command at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$src/tests/integration/lib/check.sh"
. "$src/tests/integration/lib/tarpkg.sh"
cd "$w"

# A tar of entries: "d PATH", "f PATH CONTENT", "r PATH SEED FLIP" (16 KB of
# random bytes, every 4096th changed by FLIP), "l PATH TARGET", "c PATH"
# (character device 1:3); owner 0, folders 0755, files 0644.
mktar() {
  python3 - "$@" <<'PY'
import io, random, sys, tarfile
out = sys.argv[1]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for spec in sys.argv[2:]:
        kind, path, *rest = spec.split(" ", 2)
        ti = tarfile.TarInfo(path)
        ti.uid = ti.gid = 0
        data = None
        if kind == "d":
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        elif kind == "l":
            ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, rest[0], 0o777
        elif kind == "c":
            ti.type, ti.mode, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 0o666, 1, 3
        else:
            if kind == "f":
                data = rest[0].encode().decode("unicode_escape").encode()
            else:
                seed, flip = (int(x) for x in rest[0].split())
                b = bytearray(random.Random(seed).randbytes(16384))
                for k in range(0, len(b), 4096):
                    b[k] = (b[k] + flip) & 0xff
                data = bytes(b)
            ti.mode, ti.size = 0o644, len(data)
        t.addfile(ti, io.BytesIO(data) if data is not None else None)
PY
}

# ---- the packages and the images ------------------------------------------
for v in 1 2; do
  mkdir -p "p$v"
  tarpkg "p$v/bash_$v.tar" bin/bash "bash v$v"
  tarpkg "p$v/shells_1.tar" etc/shells '/bin/sh
'
  tarpkg "p$v/doc_1.tar" usr/share/doc/x/README "removed at image time"
  mktar "p$v/base-files_1.tar" "d usr" "d usr/bin" "l bin usr/bin" "d etc" "f etc/os-release ID=test\n"
  mktar "img$v.tar" "d usr" "d usr/bin" "d usr/share" "d usr/share/doc" "d usr/share/doc/x" "d etc" "d srv" \
    "l bin usr/bin" "f usr/bin/bash bash v$v" "l usr/bin/sh bash" "f etc/os-release ID=test\n" \
    "f etc/shells /bin/sh\n/bin/bash\n" "f etc/machine-id " "r etc/big 7 $v" \
    "f etc/passwd root:x:0:0::/root:/bin/bash\n$([ "$v" = 2 ] && echo 'app:x:100:100::/:/bin/false\n')"
done
"$gen" keygen --out rel >/dev/null
P=(--board tb --channel stable --key rel.key --store store.db --no-cache --level 3)
# What the manifest says: python prints "KEY=VALUE" lines.
facts() {
  python3 - "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print("format=%s" % m["format"])
img = m.get("image")
pk = {p["name"]: p for p in m["packages"]}
if img:
    for k in ("before", "after", "replace", "remove"):
        print("%s=%s" % (k, " ".join(img[k])))
    comps = img["before"] + img["after"]
    print("components_are_packages=%s" % all(c in pk for c in comps))
    print("component_versions=%s" % all(pk[c]["version"] == "h" + pk[c]["payload"]["sha256"][:12] and
                                         pk[c]["arch"] == "all" for c in comps))
    print("with_deltas=%s" % " ".join(c for c in comps if pk[c].get("deltas")))
print("packages=%s" % " ".join(sorted(pk)))
PY
}
man() { echo "repo/boards/tb/stable/releases/$1/manifest.json"; }

# ---- without --image: format 1, and bin is refused as before ----------------
run "publish without --image" 1 "$gen" -q publish --repo repo0 "${P[@]}" --release r1 --packages p1 &&
  { grep -qF "bin is shipped by" <<<"$out" && grep -qE "symlink vs directory|directory vs symlink" <<<"$out" &&
    pass "without --image, bin (symlink vs folder) is refused as before" || fail "without --image: $out"; }
mkdir -p p0 && cp p1/bash_1.tar p1/shells_1.tar p0/
if run "publish packages alone" 0 "$gen" -q publish --repo repo0 "${P[@]}" --release r0 --packages p0; then
  f=$(facts repo0/boards/tb/stable/releases/1/manifest.json)
  grep -qx "format=1" <<<"$f" && ! grep -q "^before=" <<<"$f" && pass "packages alone: format 1, no image" ||
    fail "packages alone: $f"
fi

# ---- r1 ---------------------------------------------------------------------
if run "publish r1 --image" 0 "$gen" publish --repo repo "${P[@]}" --release r1 --packages p1 --image img1.tar; then
  echo "$out" | grep "^image:" || true
  # 15 entries. From the packages: usr/bin/bash, etc/os-release, the 6
  # folders but srv, and bin (base-files ships it as the image has it). From
  # the image: srv, usr/bin/sh and etc's 4 files (shells edited).
  grep -qE "^image: 15 entries, 9 from packages, 6 from the image in 4 components" <<<"$out" &&
    pass "r1: entries from packages and from the image printed" || fail "r1 counts: $out"
  f=$(facts "$(man 1)")
  want="format=2
before=eqota-image-skeleton
after=eqota-image.etc eqota-image.srv eqota-image.usr
replace=bin etc/shells
remove=usr/share/doc/x/README
components_are_packages=True
component_versions=True
with_deltas=
packages=base-files bash doc eqota-image-skeleton eqota-image.etc eqota-image.srv eqota-image.usr shells"
  [ "$f" = "$want" ] && pass "r1: manifest format 2 with its image" || { fail "r1 manifest"; diff <(echo "$want") <(echo "$f") || true; }
fi

# ---- r2: the changed components get deltas ----------------------------------
if run "publish r2 --image" 0 "$gen" publish --repo repo "${P[@]}" --release r2 --packages p2 --image img2.tar; then
  echo "$out" | grep "^image:" || true
  f=$(facts "$(man 2)")
  grep -qx "with_deltas=eqota-image.etc" <<<"$f" && pass "r2: eqota-image.etc has a delta from r1's" ||
    fail "r2 deltas: $f"
  grep -qE "fetches .* for them, 1 by delta" <<<"$out" && pass "r2: the components' update bytes printed" ||
    fail "r2 output: $out"
  # The unchanged components are the same payloads (kept by devices).
  python3 - "$(man 1)" "$(man 2)" <<'PY' && pass "r2: unchanged components keep their payload" || fail "r2: unchanged components changed"
import json, sys
a, b = ({p["name"]: p["payload"]["sha256"] for p in json.load(open(f))["packages"]} for f in sys.argv[1:3])
sys.exit(0 if all(a[c] == b[c] for c in ("eqota-image-skeleton", "eqota-image.srv", "eqota-image.usr")) else 1)
PY
fi

# ---- diff: the image components' bytes apart from the packages' ---------------
# r3 adds the folder opt (component eqota-image.opt added) and drops srv
# (eqota-image.srv removed). What diff says is checked against what python
# finds in the repository: each entry's download is the size of the object's
# or the smallest delta's file, and an entry is a component when the image
# section names it.
mktar img3.tar "d usr" "d usr/bin" "d usr/share" "d usr/share/doc" "d usr/share/doc/x" "d etc" "d opt" \
  "l bin usr/bin" "f usr/bin/bash bash v2" "l usr/bin/sh bash" "f etc/os-release ID=test\n" \
  "f etc/shells /bin/sh\n/bin/bash\n" "f etc/machine-id " "r etc/big 7 2" "f opt/app app" \
  "f etc/passwd root:x:0:0::/root:/bin/bash\n"
setup_step "publish r3 --image" 0 "$gen" -q publish --repo repo "${P[@]}" --release r3 --packages p2 --image img3.tar
# expect FROM TO (rN): the diff as the repository's files give it, one JSON line.
expect() {
  python3 - repo "$(man "${1#r}")" "$(man "${2#r}")" <<'PY'
import json, os, sys
repo, a, b = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
def comps(m):
    return set(m["image"]["before"] + m["image"]["after"]) if "image" in m else set()
size = lambda path: os.path.getsize(os.path.join(repo, path))
pa, pb = ({p["name"]: p for p in m["packages"]} for m in (a, b))
ents, t = {}, {"package_bytes": 0, "component_bytes": 0, "kept": 0, "changed": 0, "added": 0, "removed": 0,
               "components": {"kept": 0, "changed": 0, "added": 0, "removed": 0}}
for n in sorted(set(pa) | set(pb)):
    old, new = pa.get(n), pb.get(n)
    comp = n in (comps(b) if new else comps(a))
    if not new:
        state, cost = "removed", 0
    elif not old:
        state, cost = "added", size(new["object"]["path"])
    elif old["unihash"] == new["unihash"] or old["payload"]["sha256"] == new["payload"]["sha256"]:
        state, cost = "kept", 0
    else:
        state = "changed"
        cost = min([size(new["object"]["path"])] +
                   [size(d["path"]) for d in new.get("deltas", []) if d["from"] == old["payload"]["sha256"]])
    ents[n] = {"component": comp, "bytes": cost}
    (t["components"] if comp else t)[state] += 1
    t["component_bytes" if comp else "package_bytes"] += cost
t["components_changed"] = t["components"]["changed"] + t["components"]["added"]
print(json.dumps({"packages": ents, "totals": t}, sort_keys=True))
PY
}
# got FROM TO: the same facts from diff --json.
got() {
  "$gen" diff --repo repo --board tb --channel stable --from "$1" --to "$2" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["totals"]
assert t["package_bytes"] + t["component_bytes"] == t["download_bytes"], t
keys = ("package_bytes", "component_bytes", "kept", "changed", "added", "removed", "components", "components_changed")
print(json.dumps({"packages": {p["name"]: {"component": p["component"], "bytes": p["bytes"]} for p in d["packages"]},
                  "totals": {k: t[k] for k in keys}}, sort_keys=True))'
}
for pair in "r1 r2" "r2 r3" "r1 r3"; do
  e=$(expect "${pair% *}" "${pair#* }") && g=$(got "${pair% *}" "${pair#* }") || g="diff failed"
  [ "$e" = "$g" ] && pass "diff ${pair/ / -> }: component and package bytes as the repository's files give them" ||
    { fail "diff ${pair/ / -> }"; diff <(echo "$e" | python3 -m json.tool) <(echo "$g" | python3 -m json.tool) || true; }
done
# r2 -> r3 by name: bash is kept, one component added and one removed.
python3 -c '
import json, sys
t = json.loads(sys.argv[1])["totals"]
assert t["components"] == {"kept": 2, "changed": 1, "added": 1, "removed": 1} and t["changed"] == 0, t
assert t["components_changed"] == 2 and t["package_bytes"] == 0 and t["component_bytes"] > 0, t' "$(got r2 r3)" &&
  pass "diff r2 -> r3: eqota-image.opt added, eqota-image.srv removed, no package changed" || fail "diff r2 -> r3 counts"
if run "diff r1 -> r2 (text)" 0 "$gen" diff --repo repo --board tb --channel stable --from r1 --to r2; then
  cb=$(got r1 r2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["component_bytes"])') || cb=none
  grep -qE "^image components: 1 changed or added, $cb bytes \(.*\), [0-9.]+ % of the download$" <<<"$out" &&
    grep -qE "^total: 3 kept, 0 equivalent, 1 changed, 0 added, 0 removed;" <<<"$out" &&
    pass "diff text: the components' line, and the totals count packages only" || fail "diff text: $out"
fi
if run "diff in format 1 (text)" 0 "$gen" diff --repo repo0 --board tb --channel stable --from r0 --to r0; then
  ! grep -q "^image components" <<<"$out" && pass "diff text without an image: no components' line" ||
    fail "format 1 diff: $out"
fi

# ---- bad inputs -------------------------------------------------------------
mkdir -p pbad && cp p1/*.tar pbad/ && tarpkg pbad/eqota-image.etc_1.tar etc/x "x"
refused "a package named like a component" "package 'eqota-image.etc': the name is reserved for image components" \
  "$gen" -q publish --repo repo3 "${P[@]}" --release r1 --packages pbad --image img1.tar
mktar imgdev.tar "d usr" "d usr/bin" "l bin usr/bin" "f usr/bin/bash bash v1" "d etc" "d dev" "c dev/null"
refused "device node without --image-devices" "entry 'dev/null': a device node (give --image-devices" \
  "$gen" -q publish --repo repo4 "${P[@]}" --release r1 --packages p1 --image imgdev.tar
[ ! -e repo4/boards/tb/stable/manifest.json ] && pass "nothing published with a device node refused" ||
  fail "a release was published"
if run "device node with --image-devices" 0 "$gen" -q publish --repo repo5 "${P[@]}" --release r1 --packages p1 \
  --image imgdev.tar --image-devices; then
  grep -q "after=.*eqota-image.dev" <<<"$(facts repo5/boards/tb/stable/releases/1/manifest.json)" &&
    pass "--image-devices: dev/null in eqota-image.dev" || fail "no eqota-image.dev"
fi
mktar imgdev2.tar "d usr" "d usr/bin" "l bin usr/bin" "f usr/bin/bash bash v1" "d etc" "c etc/null"
refused "device node outside dev/" "entry 'etc/null': a device node outside dev/" \
  "$gen" -q publish --repo repo6 "${P[@]}" --release r1 --packages p1 --image imgdev2.tar --image-devices
run "--image-devices alone" 2 "$gen" publish --repo repo7 "${P[@]}" --release r1 --packages p1 --image-devices &&
  { grep -qF -- "--image-devices needs --image ROOTFS" <<<"$out" && pass "--image-devices alone: usage error" ||
    fail "--image-devices alone: $out"; }
refused "a missing image" "nothere.tar" \
  "$gen" -q publish --repo repo8 "${P[@]}" --release r1 --packages p1 --image nothere.tar
[ "$fails" -eq 0 ]
