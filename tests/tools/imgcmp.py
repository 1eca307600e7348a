#!/usr/bin/env python3
"""imgcmp.py: compares two root filesystems entry by entry.

Usage: imgcmp.py A B [--exclude PATTERN ...] [--persist PATH ...]
                 [--no-default-excludes] [--json]

A and B are each a directory or a tar file (any compression Python's
tarfile reads). This tool is independent of eqota on purpose: it uses only
the Python 3 standard library and shares no code with eqota or its tests,
so that "the slot equals the image" is checked by something that did not
build the slot.

Compared for every entry (a path relative to the root; the root itself is
"."):
  - type: file, dir, symlink, chardev, blockdev, fifo, socket
  - regular files: SHA-256 of the content
  - mode: the permission bits with setuid, setgid and sticky (07777);
    not for symlinks, whose mode Linux does not use
  - owner: numeric uid and gid (names are not compared)
  - xattrs: every extended attribute, name and value. A tree is read with
    os.listxattr/os.getxattr without following symlinks; a tar with the pax
    records SCHILY.xattr.NAME (GNU tar, mmdebstrap) and LIBARCHIVE.xattr.NAME
    (bsdtar). POSIX ACLs stored as tar's SCHILY.acl records are not read.
    A hard link in a tar has the mode, owner and xattrs of the entry it
    links to (one inode; GNU tar writes xattrs only with the first name).
  - symlink target, byte for byte
  - device major and minor numbers of character and block devices
  - hard-link groups, compared as a partition of the paths: a non-directory
    is reported when the set of paths it shares an inode with (a tree) or is
    hard-linked with (a tar) differs between A and B
  - entries in A missing from B, and entries in B that A lacks
Not compared: modification and access times, and the size of directories;
a device composes the same tree at another time.

Exclusions. A path matching an exclusion, and everything below it, is left
out of both sides. PATTERN is a shell pattern (fnmatch) matched against the
relative path without leading "./" or "/". The default exclusions, which
--no-default-excludes drops, are all here:
  usr/lib/eqota/slot   eqota's record of the installed release (manifest,
                       signature, each package's file list); it is written
                       on the device and is in no image
There are no others; anything else that legitimately differs on a device
must be named with --exclude or --persist on the command line. A folder
that only one side has, that leads to an excluded path and holds nothing
else, is left out too: the device makes usr/lib/eqota to hold
usr/lib/eqota/slot in an image that does not ship eqota.

--persist PATH declares PATH device-local (eqota's [persist] section): it
and everything below it are not counted as differences, and a line
"persist: PATH: ..." says whether B's copy equals A's or is B's own, so a
test can check that the device kept its own file rather than the image's.

Output: one line per difference, "PATH: WHAT: A-value vs B-value" (or
"PATH: missing in B (A has TYPE)" / "PATH: extra in B (B has TYPE)"), then
"N differences". --json prints one JSON document instead.
Exit status: 0 no differences, 1 differences, 2 usage or read error.
"""

import argparse
import base64
import errno
import fnmatch
import hashlib
import json
import os
import stat
import sys
import tarfile
import urllib.parse

DEFAULT_EXCLUDES = ["usr/lib/eqota/slot"]


class ReadError(Exception):
    pass


class Entry:
    __slots__ = ("type", "sha256", "size", "mode", "uid", "gid", "xattrs", "target", "dev", "link_key")

    def __init__(self, kind):
        self.type = kind
        self.sha256 = None
        self.size = None
        self.mode = None
        self.uid = None
        self.gid = None
        self.xattrs = {}
        self.target = None
        self.dev = None
        # Entries with the same link_key are one hard-link group.
        self.link_key = None


def norm(name):
    """A tar member's or a walk's path, relative, without ./ or trailing /."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ReadError(f"entry '{name}' has a '..' component")
    return "/".join(parts) or "."


def drop_holders(x, other, patterns):
    """Drops from x the folders other lacks that only lead to an excluded path."""
    for path in sorted((p for p in x if p not in other), key=len, reverse=True):
        if x[path].type != "dir":
            continue
        leads = any(pat.startswith(path + "/") for pat in patterns)
        holds = any(q.startswith(path + "/") for q in x)
        if leads and not holds:
            del x[path]


def excluded(path, patterns):
    """True when path or one of its parent folders matches a pattern."""
    if path == ".":
        return False
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        for pat in patterns:
            if fnmatch.fnmatchcase(prefix, pat):
                return True
    return False


def hash_stream(f):
    h = hashlib.sha256()
    size = 0
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        h.update(chunk)
        size += len(chunk)
    return h.hexdigest(), size


def read_tree(root, skip):
    entries = {}
    try:
        root_st = os.lstat(root)
    except OSError as e:
        raise ReadError(f"{root}: {e.strerror}")

    def add(rel, full, st):
        m = st.st_mode
        if stat.S_ISREG(m):
            e = Entry("file")
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as err:
                raise ReadError(f"{full}: {err.strerror}")
            with os.fdopen(fd, "rb") as f:
                e.sha256, e.size = hash_stream(f)
        elif stat.S_ISDIR(m):
            e = Entry("dir")
        elif stat.S_ISLNK(m):
            e = Entry("symlink")
            e.target = os.fsencode(os.readlink(full))
        elif stat.S_ISCHR(m) or stat.S_ISBLK(m):
            e = Entry("chardev" if stat.S_ISCHR(m) else "blockdev")
            e.dev = (os.major(st.st_rdev), os.minor(st.st_rdev))
        elif stat.S_ISFIFO(m):
            e = Entry("fifo")
        elif stat.S_ISSOCK(m):
            e = Entry("socket")
        else:
            raise ReadError(f"{full}: unknown file type {oct(stat.S_IFMT(m))}")
        if not stat.S_ISDIR(m) and st.st_nlink > 1:
            e.link_key = (st.st_dev, st.st_ino)
        e.mode = stat.S_IMODE(m)
        e.uid, e.gid = st.st_uid, st.st_gid
        try:
            for name in os.listxattr(full, follow_symlinks=False):
                e.xattrs[name] = os.getxattr(full, name, follow_symlinks=False)
        except OSError as err:
            # A file system without xattr support has none to compare.
            if err.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
                raise ReadError(f"{full}: reading xattrs: {err.strerror}")
        entries[rel] = e

    if not stat.S_ISDIR(root_st.st_mode):
        raise ReadError(f"{root}: not a directory")
    add(".", root, root_st)
    stack = [("", root)]
    while stack:
        rel_dir, full_dir = stack.pop()
        try:
            names = os.listdir(full_dir)
        except OSError as e:
            raise ReadError(f"{full_dir}: {e.strerror}")
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if excluded(rel, skip):
                continue
            full = os.path.join(full_dir, name)
            try:
                st = os.lstat(full)
            except OSError as e:
                raise ReadError(f"{full}: {e.strerror}")
            add(rel, full, st)
            if stat.S_ISDIR(st.st_mode):
                stack.append((rel, full))
    return entries


def tar_xattrs(member):
    out = {}
    for key, value in member.pax_headers.items():
        if key.startswith("SCHILY.xattr."):
            # tarfile decodes pax values as UTF-8 with surrogateescape.
            out[key[len("SCHILY.xattr."):]] = value.encode("utf-8", "surrogateescape")
        elif key.startswith("LIBARCHIVE.xattr."):
            name = urllib.parse.unquote(key[len("LIBARCHIVE.xattr."):])
            out[name] = base64.b64decode(value + "=" * (-len(value) % 4))
    return out


def read_tar(path, skip):
    entries = {}
    try:
        tf = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as e:
        raise ReadError(f"{path}: {e}")
    with tf:
        try:
            for m in tf:
                rel = norm(m.name)
                if excluded(rel, skip):
                    continue
                if m.islnk():
                    target = norm(m.linkname)
                    if target not in entries:
                        raise ReadError(f"{path}: hard link '{rel}' to '{target}', which is not before it in the tar")
                    t = entries[target]
                    if t.link_key is None:
                        t.link_key = target
                    e = Entry(t.type)
                    e.sha256, e.size, e.target, e.dev = t.sha256, t.size, t.target, t.dev
                    e.link_key = t.link_key
                    # The inode's mode, owner and xattrs are the target's:
                    # GNU tar writes no xattr records on a hard link.
                    e.mode, e.uid, e.gid, e.xattrs = t.mode, t.uid, t.gid, dict(t.xattrs)
                    entries[rel] = e
                    continue
                elif m.isreg():
                    e = Entry("file")
                    f = tf.extractfile(m)
                    e.sha256, e.size = hash_stream(f)
                elif m.isdir():
                    e = Entry("dir")
                elif m.issym():
                    e = Entry("symlink")
                    e.target = os.fsencode(m.linkname)
                elif m.ischr() or m.isblk():
                    e = Entry("chardev" if m.ischr() else "blockdev")
                    e.dev = (m.devmajor, m.devminor)
                elif m.isfifo():
                    e = Entry("fifo")
                else:
                    raise ReadError(f"{path}: entry '{rel}' has tar type {m.type!r}, which is no file type")
                e.mode = m.mode & 0o7777
                e.uid, e.gid = m.uid, m.gid
                e.xattrs = tar_xattrs(m)
                # A later member replaces an earlier one, as extraction does.
                entries[rel] = e
        except (OSError, tarfile.TarError, EOFError) as err:
            raise ReadError(f"{path}: {err}")
    return entries


def read_root(path, skip):
    if os.path.isdir(path):
        return read_tree(path, skip)
    if os.path.isfile(path):
        return read_tar(path, skip)
    raise ReadError(f"{path}: neither a directory nor a tar file")


def show_bytes(b):
    try:
        s = b.decode("ascii")
        if s.isprintable():
            return repr(s)
    except UnicodeDecodeError:
        pass
    return "0x" + b.hex()


def link_groups(entries):
    groups = {}
    for path, e in entries.items():
        if e.link_key is not None:
            groups.setdefault(e.link_key, set()).add(path)
    return {p: frozenset(g) for g in groups.values() if len(g) > 1 for p in g}


def compare(a, b, persist):
    diffs = []

    def d(path, what, va, vb):
        diffs.append({"path": path, "what": what, "a": va, "b": vb})

    ga, gb = link_groups(a), link_groups(b)
    # Hard-link groups are compared over the paths both sides have: a
    # missing path is reported once, as missing.
    common = set(a) & set(b)
    for path in sorted(set(a) | set(b)):
        if path in persist:
            continue
        ea, eb = a.get(path), b.get(path)
        if eb is None:
            d(path, "missing in B", ea.type, None)
            continue
        if ea is None:
            d(path, "extra in B", None, eb.type)
            continue
        if ea.type != eb.type:
            d(path, "type", ea.type, eb.type)
            continue
        if ea.type == "file" and ea.sha256 != eb.sha256:
            d(path, "content", f"sha256 {ea.sha256[:16]} ({ea.size} bytes)", f"sha256 {eb.sha256[:16]} ({eb.size} bytes)")
        if ea.type != "symlink" and ea.mode != eb.mode:
            d(path, "mode", f"{ea.mode:04o}", f"{eb.mode:04o}")
        if (ea.uid, ea.gid) != (eb.uid, eb.gid):
            d(path, "owner", f"{ea.uid}:{ea.gid}", f"{eb.uid}:{eb.gid}")
        for name in sorted(set(ea.xattrs) | set(eb.xattrs)):
            xa, xb = ea.xattrs.get(name), eb.xattrs.get(name)
            if xa != xb:
                d(path, f"xattr {name}",
                  "(none)" if xa is None else show_bytes(xa),
                  "(none)" if xb is None else show_bytes(xb))
        if ea.type == "symlink" and ea.target != eb.target:
            d(path, "symlink target", show_bytes(ea.target), show_bytes(eb.target))
        if ea.dev != eb.dev:
            d(path, "device", "%d:%d" % ea.dev, "%d:%d" % eb.dev)
        if ea.type != "dir":
            la, lb = ga.get(path, frozenset([path])), gb.get(path, frozenset([path]))
            la, lb = la & common, lb & common
            if la != lb:
                d(path, "hard-link group", " ".join(sorted(la)), " ".join(sorted(lb)))
    return diffs


def persist_report(a, b, paths):
    lines = []
    for p in paths:
        ea, eb = a.get(p), b.get(p)
        if ea is None and eb is None:
            state = "in neither"
        elif eb is None:
            state = "missing in B"
        elif ea is None:
            state = "only in B"
        elif ea.type != eb.type:
            state = f"B's own ({ea.type} in A, {eb.type} in B)"
        elif ea.type == "file" and ea.sha256 == eb.sha256:
            state = "equal to A"
        elif ea.type == "file":
            state = "B's own (content differs from A)"
        else:
            state = f"{eb.type} in both"
        lines.append({"path": p, "state": state})
    return lines


def main(argv):
    ap = argparse.ArgumentParser(
        prog="imgcmp.py",
        description="Compare two root filesystems (directories or tar files) entry by entry.")
    ap.add_argument("a", metavar="A")
    ap.add_argument("b", metavar="B")
    ap.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                    help="leave out paths matching PATTERN and everything below them")
    ap.add_argument("--persist", action="append", default=[], metavar="PATH",
                    help="a device-local path: not a difference, reported as a persist: line")
    ap.add_argument("--no-default-excludes", action="store_true",
                    help="compare also " + ", ".join(DEFAULT_EXCLUDES))
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)

    patterns = ([] if args.no_default_excludes else list(DEFAULT_EXCLUDES)) + [norm(p) for p in args.exclude]
    persist = [norm(p) for p in args.persist]
    try:
        a = read_root(args.a, patterns)
        b = read_root(args.b, patterns)
    except ReadError as e:
        print(f"imgcmp: {e}", file=sys.stderr)
        return 2
    drop_holders(a, b, patterns)
    drop_holders(b, a, patterns)
    # A persisted path's subtree is the device's own: left out, reported apart.
    persisted = {p for p in set(a) | set(b) if excluded(p, persist)}
    diffs = compare(a, b, persisted)
    plines = persist_report(a, b, persist)
    n = len(diffs)
    summary = f"{n} difference{'' if n == 1 else 's'}"
    if args.json:
        json.dump({"a": args.a, "b": args.b, "entries": {"a": len(a), "b": len(b)},
                   "excluded": patterns, "persist": plines,
                   "differences": diffs, "count": n}, sys.stdout, indent=1)
        print()
    else:
        for x in diffs:
            if x["what"] == "missing in B":
                print(f"{x['path']}: missing in B (A has {x['a']})")
            elif x["what"] == "extra in B":
                print(f"{x['path']}: extra in B (B has {x['b']})")
            else:
                print(f"{x['path']}: {x['what']}: {x['a']} vs {x['b']}")
        for p in plines:
            print(f"persist: {p['path']}: {p['state']}")
        print(f"{summary} ({len(a)} entries in A, {len(b)} in B; excluded: {' '.join(patterns) or 'nothing'})")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
