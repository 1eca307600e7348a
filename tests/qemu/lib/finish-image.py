#!/usr/bin/env python3
"""finish-image.py IN.tar OUT.tar OVERLAY [--remove PATH]...

The last step of the QEMU boards' image build, after mmdebstrap
(tests/tools/mkimages.sh board): what a product's image recipe adds on top
of its packages (Yocto's ROOTFS_POSTPROCESS_COMMAND), here the test
device's configuration, its root of trust, its network and the test
report unit. The result is the image the release is published from, so a
slot that eqota builds must equal it entry by entry.

Every entry of IN is copied as it is (owner, mode, times, pax headers with
the file capabilities and other xattrs, hard links, device nodes), except
the paths OVERLAY replaces and the --remove ones; then OVERLAY's entries
that IN lacks are appended, parents first, owned by root, with the mtime of
SOURCE_DATE_EPOCH (or IN's /etc). A folder of OVERLAY that IN has already
keeps IN's entry. Hard links in IN to a replaced or removed file are refused:
the image would change in a way nobody asked for.
"""
import os
import sys
import tarfile


def norm(name):
    name = name[2:] if name.startswith("./") else name
    return name.rstrip("/")


def main(argv):
    if len(argv) < 3 or (len(argv) - 3) % 2:
        sys.exit(__doc__.strip().splitlines()[0])
    src, dst, overlay = argv[0], argv[1], argv[2]
    remove = set()
    rest = argv[3:]
    for i in range(0, len(rest), 2):
        if rest[i] != "--remove":
            sys.exit(f"finish-image: unknown option {rest[i]}")
        remove.add(norm(rest[i + 1].lstrip("/")))

    added = {}
    for root, dirs, files in os.walk(overlay):
        dirs.sort()
        for n in sorted(dirs) + sorted(files):
            p = os.path.join(root, n)
            added[os.path.relpath(p, overlay)] = p

    with tarfile.open(src, "r:") as tin:
        members = tin.getmembers()
        have = {norm(m.name): m for m in members}
        mtime = int(os.environ.get("SOURCE_DATE_EPOCH") or have["etc"].mtime)
        for m in members:
            if m.islnk() and (norm(m.linkname) in remove or
                              (norm(m.linkname) in added and not os.path.isdir(added[norm(m.linkname)]))):
                sys.exit(f"finish-image: {src}: {m.name} is a hard link to {m.linkname}, which is replaced")
        missing = [r for r in remove if r not in have]
        if missing:
            sys.exit(f"finish-image: {src} has no {', '.join(sorted(missing))} to remove")
        with tarfile.open(dst, "w:", format=tarfile.PAX_FORMAT) as tout:
            for m in members:
                n = norm(m.name)
                if n in remove:
                    continue
                if n in added and not os.path.isdir(added[n]):
                    if m.isdir():
                        sys.exit(f"finish-image: {src}: {n} is a folder, the overlay has a file there")
                    continue  # replaced below, with the overlay's entry
                tout.addfile(m, tin.extractfile(m) if m.isreg() else None)
            for rel in sorted(added):
                p = added[rel]
                if os.path.isdir(p) and rel in have:
                    continue
                parent = os.path.dirname(rel)
                if parent and parent not in have and parent not in added:
                    sys.exit(f"finish-image: {rel}: its folder {parent} is in neither the image nor the overlay")
                ti = tout.gettarinfo(p, arcname="./" + rel)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = "root"
                ti.mtime = mtime
                if ti.isreg():
                    with open(p, "rb") as f:
                        tout.addfile(ti, f)
                else:
                    tout.addfile(ti)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
