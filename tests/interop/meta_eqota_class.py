#!/usr/bin/env python3
"""meta-eqota's image class against BitBake's real datastore and parser
(EQ_BITBAKE_DIR): classes/eqota.bbclass is parsed by bb.parse into a
recipe's datastore, its eqota_write_index runs with bb.build.exec_func over
a BB_TASKDEPDATA of bb.TaskData tuples, pkgdata files and real .ipk files of
the shapes OE writes, and the index it writes goes to the real eqota-gen.
Only oe.rootfs (OpenEmbedded-Core) is stood in for: it lists the packages
installed in the image.

Usage: meta_eqota_class.py EQOTA_GEN SOURCE_DIR
"""
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import types

gen, src = sys.argv[1], sys.argv[2]
bbdir = os.environ.get("EQ_BITBAKE_DIR", "")
if not bbdir or not os.path.isfile(os.path.join(bbdir, "lib", "bb", "__init__.py")):
    print("SKIP: set EQ_BITBAKE_DIR to an openembedded/bitbake tree (see docs/yocto.md)")
    sys.exit(77)
sys.path.insert(0, os.path.join(bbdir, "lib"))
sys.path.insert(0, os.path.join(src, "meta-eqota", "lib"))
import bb  # noqa: E402
import bb.build  # noqa: E402
import bb.data  # noqa: E402
import bb.parse  # noqa: E402
from eqota import yocto  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    fails += 0 if ok else 1


def ipk(path, name, version, arch, files):
    """A tar-container .ipk, as opkg-build makes them: debian-binary,
    control.tar.gz and data.tar.gz in a gzipped tar."""
    def tgz(entries):
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w:gz") as t:
            for n, body in entries:
                i = tarfile.TarInfo(n)
                i.size = len(body)
                t.addfile(i, io.BytesIO(body))
        return b.getvalue()
    control = ("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: t\nDescription: t\n" %
               (name, version, arch)).encode()
    members = [("./debian-binary", b"2.0\n"), ("./control.tar.gz", tgz([("./control", control)])),
               ("./data.tar.gz", tgz([("./" + p, body) for p, body in files]))]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as t:
        for n, body in members:
            i = tarfile.TarInfo(n)
            i.size = len(body)
            t.addfile(i, io.BytesIO(body))


def expect_taskhash(unihash, pkg):
    return hashlib.sha256(b"eqota-yocto-v1\0" + unihash.encode() + b"\0" + pkg.encode()).hexdigest()


w = tempfile.mkdtemp(prefix="eq-meta-")
U = {pn: hashlib.sha256(pn.encode()).hexdigest() for pn in ("busybox", "zlib", "base-files")}
STALE = hashlib.sha256(b"before the server answered").hexdigest()

# BB_TASKDEPDATA as runqueue builds it for do_rootfs: task id -> bb.TaskData.
taskdepdata = {}
for pn in U:
    fn = "/layers/meta/recipes/%s/%s.bb" % (pn, pn)
    for task, uni in (("do_package", STALE), ("do_package_write_ipk", U[pn]), ("do_populate_sysroot", STALE)):
        tid = "%s:%s" % (fn, task)
        taskdepdata[tid] = bb.TaskData(pn, task, fn, set(), [pn], uni, uni, "hashfn", {})
check(isinstance(next(iter(taskdepdata.values())), tuple), "BB_TASKDEPDATA entries are bb.TaskData tuples")

# pkgdata: runtime-reverse/<pkg> links to runtime/<pkg>, which names PN.
pkgdata = os.path.join(w, "pkgdata")
os.makedirs(os.path.join(pkgdata, "runtime"))
os.makedirs(os.path.join(pkgdata, "runtime-reverse"))
installed = {
    "busybox": ("busybox", "1.36.1-r0", "core2-64"),
    "busybox-syslog": ("busybox", "1.36.1-r0", "core2-64"),
    "libz1": ("zlib", "1:1.3.1-r0", "core2-64"),
    "base-files": ("base-files", "3.0.14-r0", "qemux86_64"),
}
deploy = os.path.join(w, "deploy-ipk")
for pkg, (pn, ver, arch) in installed.items():
    with open(os.path.join(pkgdata, "runtime", pkg), "w") as f:
        f.write("PN: %s\nPV: %s\nPKG:%s: %s\n" % (pn, ver.split("-")[0], pkg, pkg))
    os.symlink("../runtime/" + pkg, os.path.join(pkgdata, "runtime-reverse", pkg))
    filever = ver.split(":", 1)[-1]
    ipk(os.path.join(deploy, arch, "%s_%s_%s.ipk" % (pkg, filever, arch)), pkg, ver, arch,
        [("usr/share/%s/data" % pkg, ("%s %s" % (pkg, ver)).encode())])

# Parse the class as BitBake parses it, into a tiny image recipe.
recipe = os.path.join(w, "test-image.bb")
with open(recipe, "w") as f:
    f.write('PN = "test-image"\ninherit eqota\n')
d0 = bb.data.init()
d0.setVar("BBPATH", "%s:%s" % (bbdir, os.path.join(src, "meta-eqota")))
d0.setVar("__bbclasstype", "recipe")
d0.setVar("TOPDIR", w)
d0.setVar("MACHINE", "qemux86-64")
d0.setVar("BB_HASHSERVE", "unix://%s/hashserve.sock" % w)
bb.parse.init_parser(d0)
parsed = bb.parse.handle(recipe, d0)
d = parsed[""] if isinstance(parsed, dict) else parsed

check(d.getVar("__BBTASKS", False) == ["do_eqota_publish"] and
      d.getVarFlag("do_eqota_publish", "deps") == ["do_image_complete"],
      "do_eqota_publish runs after do_image_complete")
check(d.getVarFlag("do_eqota_publish", "nostamp") == "1", "do_eqota_publish is nostamp (never from sstate)")
excl = (d.getVarFlag("do_eqota_publish", "vardepsexclude") or "").split()
check(all(v in excl for v in ("EQOTA_SIGNING_KEY", "EQOTA_TIMESTAMP_KEY", "EQOTA_HASHSERV", "BB_ORIGENV")),
      "the key paths and the server are not part of the task's signature")
check("eqota_write_index" in (d.getVar("ROOTFS_POSTUNINSTALL_COMMAND") or "").split(),
      "do_rootfs writes the index (ROOTFS_POSTUNINSTALL_COMMAND)")
check("BB_TASKDEPDATA" in (d.getVarFlag("eqota_write_index", "vardepsexclude") or "").split(),
      "BB_TASKDEPDATA stays out of the rootfs signature")
check(d.getVar("EQOTA_HASHSERV") == "unix://%s/hashserve.sock" % w, "EQOTA_HASHSERV defaults to BB_HASHSERVE")
check(d.getVar("EQOTA_BOARD") == "qemux86-64" and d.getVar("EQOTA_CHANNEL") == "stable",
      "EQOTA_BOARD defaults to MACHINE, EQOTA_CHANNEL to stable")
check(d.getVar("EQOTA_IMAGE_MODE") == "1" and d.getVar("EQOTA_IMAGE_DEVICES") == "0",
      "image mode is the default, device nodes are not")
check("tar" in (d.getVar("IMAGE_FSTYPES") or "").split(), "image mode adds the tar the publish reads to IMAGE_FSTYPES")
check("--xattrs" in (d.getVar("IMAGE_CMD_TAR") or "").split(), "image mode makes OE's tar keep xattrs")
d_pkgs = bb.data.createCopy(d)
d_pkgs.setVar("EQOTA_IMAGE_MODE", "0")
check("tar" not in (d_pkgs.getVar("IMAGE_FSTYPES") or "").split() and
      "--xattrs" not in (d_pkgs.getVar("IMAGE_CMD_TAR") or ""),
      "EQOTA_IMAGE_MODE = 0 leaves IMAGE_FSTYPES and the tar command alone")

# Run the class's eqota_write_index as do_rootfs would.
img = os.path.join(w, "imgdeploy")
for k, v in {"IMAGE_PKGTYPE": "ipk", "DEPLOY_DIR_IPK": deploy, "PKGDATA_DIR": pkgdata,
             "IMGDEPLOYDIR": img, "IMAGE_NAME": "test-image-qemux86-64.rootfs-20261205",
             "IMAGE_LINK_NAME": "test-image-qemux86-64", "T": os.path.join(w, "temp"),
             "WORKDIR": w, "BB_UNIHASH": STALE}.items():
    d.setVar(k, v)
d.setVar("BB_TASKDEPDATA", taskdepdata)
rootfs = types.ModuleType("oe.rootfs")
rootfs.image_list_installed_packages = lambda dd: {p: {"arch": a, "ver": v, "deps": []}
                                                   for p, (_, v, a) in installed.items()}
sys.modules["oe"] = types.ModuleType("oe")
sys.modules["oe.rootfs"] = rootfs
os.makedirs(d.getVar("T"), exist_ok=True)
bb.build.exec_func("eqota_write_index", d)
index = os.path.join(img, "test-image-qemux86-64.eqota-index")
lines = [l.split() for l in open(index) if not l.startswith("#")]
got = {p: t for p, t in lines}
want = {p: expect_taskhash(U[pn], p) for p, (pn, _, _) in installed.items()}
check(got == want, "one line per installed package: sha256(eqota-yocto-v1, recipe's do_package_write_ipk "
      "unihash, package name)")
check(got["busybox"] != got["busybox-syslog"], "two packages of one recipe get different taskhashes")
check(STALE not in open(index).read() and all(t != expect_taskhash(STALE, p) for p, t in got.items()),
      "BB_UNIHASH and other tasks' unihashes are not used")
files = open(index + ".files").read().split()
check(sorted(os.path.basename(f) for f in files) ==
      sorted("%s_%s_%s.ipk" % (p, v.split(":", 1)[-1], a) for p, (_, v, a) in installed.items()),
      "the package files are found in the deploy folder (epoch dropped from file names)")

# Bad input: a recipe missing from BB_TASKDEPDATA, pkgdata missing, no file.
try:
    yocto.build_index(d, {"orphan": {"arch": "core2-64", "ver": "1"}})
    check(False, "a package without pkgdata is refused")
except yocto.EqotaError as e:
    check("orphan" in str(e) and "pkgdata" in str(e), "a package without pkgdata is refused: %s" % e)
d.setVar("BB_TASKDEPDATA", {k: v for k, v in taskdepdata.items() if v.pn != "zlib"})
try:
    yocto.build_index(d, {"libz1": {"arch": "core2-64", "ver": "1:1.3.1-r0"}})
    check(False, "a recipe missing from BB_TASKDEPDATA is refused")
except yocto.EqotaError as e:
    check("zlib" in str(e) and "do_package_write_ipk" in str(e), "a recipe missing from BB_TASKDEPDATA: %s" % e)
d.setVar("BB_TASKDEPDATA", taskdepdata)
try:
    yocto.build_index(d, {"busybox": {"arch": "core2-64", "ver": "9.9-r0"}})
    check(False, "a package file that is not there is refused")
except yocto.EqotaError as e:
    check("no files match" in str(e), "a package file that is not there: %s" % e)
try:
    yocto.recipe_unihashes({}, "do_package_write_ipk")
    check(False, "an empty BB_TASKDEPDATA is refused")
except yocto.EqotaError as e:
    check("BB_TASKDEPDATA is empty" in str(e), "an empty BB_TASKDEPDATA is refused")

# The publish command: key and repository required; server or local store;
# the login from the environment bitbake started in, not the datastore.
try:
    yocto.publish_command(d, "/p", index)
    check(False, "publishing without EQOTA_REPO and EQOTA_SIGNING_KEY is refused")
except yocto.EqotaError as e:
    check("EQOTA_REPO" in str(e) or "EQOTA_SIGNING_KEY" in str(e), "missing EQOTA_REPO/KEY refused: %s" % e)
subprocess.run([gen, "keygen", "--out", os.path.join(w, "rel")], check=True, stdout=subprocess.DEVNULL)
origenv = bb.data.init()
origenv.setVar("EQOTA_HASHSERV_USERNAME", "builder")
origenv.setVar("EQOTA_HASHSERV_TOKEN", "secret")
d.setVar("BB_ORIGENV", origenv)
for k, v in {"EQOTA_REPO": os.path.join(w, "repo"), "EQOTA_SIGNING_KEY": os.path.join(w, "rel.key"),
             "EQOTA_BOARD": "qemux86-64", "EQOTA_RELEASE": "1.0", "EQOTA_LEVEL": "3"}.items():
    d.setVar(k, v)
# Image mode: the deployed tar of the rootfs (what do_image_tar wrote from
# IMAGE_ROOTFS inside pseudo), behind the image's link name.
deploy_img = os.path.join(w, "deploy-images")
os.makedirs(deploy_img)
d.setVar("DEPLOY_DIR_IMAGE", deploy_img)
image_tar = os.path.join(deploy_img, "test-image-qemux86-64.tar")
check(d.getVar("EQOTA_IMAGE") == image_tar, "EQOTA_IMAGE is the image's tar in DEPLOY_DIR_IMAGE")
try:
    yocto.publish_command(d, "/p", index)
    check(False, "image mode without the deployed tar is refused")
except yocto.EqotaError as e:
    check("EQOTA_IMAGE" in str(e) and image_tar in str(e) and "EQOTA_IMAGE_MODE" in str(e),
          "image mode without the deployed tar is refused: %s" % e)


def rootfs_tar(path, packages):
    """The rootfs as OE's tar image has it: the packages' files, folders,
    and what only do_rootfs makes (etc/hostname, a user database)."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        def add(name, body=None, mode=0o644, kind=tarfile.REGTYPE):
            i = tarfile.TarInfo(name)
            i.type, i.mode, i.uid, i.gid, i.mtime = kind, mode, 0, 0, 1700000000
            if body is not None:
                i.size = len(body)
            t.addfile(i, io.BytesIO(body) if body is not None else None)
        add("./", mode=0o755, kind=tarfile.DIRTYPE)
        for dname in ("etc", "usr", "usr/share"):
            add("./" + dname, mode=0o755, kind=tarfile.DIRTYPE)
        for pkg, (_, ver, _) in sorted(packages.items()):
            add("./usr/share/" + pkg, mode=0o755, kind=tarfile.DIRTYPE)
            add("./usr/share/%s/data" % pkg, ("%s %s" % (pkg, ver)).encode())
        add("./etc/hostname", b"qemux86-64\n")
        add("./etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")


rootfs_tar(image_tar + ".real", installed)
os.symlink(os.path.basename(image_tar) + ".real", image_tar)
cmd, env = yocto.publish_command(d, "/p", index)
check(cmd[cmd.index("--image") + 1] == image_tar and "--image-devices" not in cmd,
      "image mode: --image names the deployed tar, no --image-devices")
check(cmd.index("--image") > cmd.index("--packages"), "the image is published with its packages (--packages stays)")
d.setVar("EQOTA_IMAGE_DEVICES", "1")
check("--image-devices" in yocto.publish_command(d, "/p", index)[0], "EQOTA_IMAGE_DEVICES = 1: --image-devices")
d.setVar("EQOTA_IMAGE_MODE", "0")
try:
    yocto.publish_command(d, "/p", index)
    check(False, "EQOTA_IMAGE_DEVICES = 1 with EQOTA_IMAGE_MODE = 0 is refused")
except yocto.EqotaError as e:
    check("EQOTA_IMAGE_DEVICES" in str(e) and "EQOTA_IMAGE_MODE" in str(e),
          "EQOTA_IMAGE_DEVICES = 1 with EQOTA_IMAGE_MODE = 0 is refused: %s" % e)
d.setVar("EQOTA_IMAGE_DEVICES", "0")
pcmd = yocto.publish_command(d, "/p", index)[0]
check("--image" not in pcmd and "--image-devices" not in pcmd and "--packages" in pcmd,
      "EQOTA_IMAGE_MODE = 0: the packages alone")
d.setVar("EQOTA_IMAGE_MODE", "1")
for bad in ("wic", "tar.lz4", "ext4"):
    d.setVar("EQOTA_IMAGE_FSTYPE", bad)
    try:
        yocto.publish_command(d, "/p", index)
        check(False, "EQOTA_IMAGE_FSTYPE = %s is refused" % bad)
    except yocto.EqotaError as e:
        check("EQOTA_IMAGE_FSTYPE" in str(e) and bad in str(e) and "tar.zst" in str(e),
              "EQOTA_IMAGE_FSTYPE = %s is refused: %s" % (bad, e))
d.setVar("EQOTA_IMAGE_FSTYPE", "tar")
for var, bad in (("EQOTA_IMAGE_MODE", "yes"), ("EQOTA_IMAGE_DEVICES", "true")):
    d.setVar(var, bad)
    try:
        yocto.publish_command(d, "/p", index)
        check(False, "%s = %s is refused" % (var, bad))
    except yocto.EqotaError as e:
        check(var in str(e) and bad in str(e), "%s = %s is refused: %s" % (var, bad, e))
    d.setVar(var, "0" if var == "EQOTA_IMAGE_DEVICES" else "1")

cmd, env = yocto.publish_command(d, "/p", index)
check(cmd[cmd.index("--hashserv") + 1] == "unix://%s/hashserve.sock" % w and "--store" not in cmd,
      "publish uses the build's hashserv")
check(env == {"EQOTA_HASHSERV_USERNAME": "builder", "EQOTA_HASHSERV_TOKEN": "secret"} and
      "secret" not in " ".join(cmd), "the login comes from the original environment, never the command line")
d.setVar("EQOTA_HASHSERV", "ws://farm:8686")
try:
    yocto.publish_command(d, "/p", index)
    check(False, "a WebSocket hashserv is refused")
except yocto.EqotaError as e:
    check("WebSocket" in str(e), "a WebSocket hashserv is refused with a reason")
# Inside a task BitBake sets BB_HASHSERVE only for "auto": the default
# ${BB_HASHSERVE} then stays a reference (found by the offline OE-Core build).
d_ref = bb.data.createCopy(d)
d_ref.delVar("EQOTA_HASHSERV")
d_ref.setVar("EQOTA_HASHSERV", "${BB_HASHSERVE}")
d_ref.delVar("BB_HASHSERVE")
try:
    yocto.publish_command(d_ref, "/p", index)
    check(False, "an EQOTA_HASHSERV that is still ${BB_HASHSERVE} in the task is refused")
except yocto.EqotaError as e:
    check("${BB_HASHSERVE}" in str(e) and "EQOTA_HASHSERV" in str(e),
          "an EQOTA_HASHSERV that is still ${BB_HASHSERVE} in the task is refused: %s" % e)

# The index and files through the real eqota-gen (local store here; the
# hashserv interop tests cover the server).
d.setVar("EQOTA_HASHSERV", "")
d.setVar("EQOTA_STORE", os.path.join(w, "equiv.db"))
d.setVar("EQOTA_CACHE", os.path.join(w, "inputs.db"))
pkgs = os.path.join(w, "packages")
os.makedirs(pkgs)
for f in files:
    os.symlink(os.path.join(deploy, f), os.path.join(pkgs, os.path.basename(f)))
check("--trusted-root" not in yocto.publish_command(d, pkgs, index)[0], "no EQOTA_TRUSTED_ROOT: no --trusted-root")
d.setVar("EQOTA_TRUSTED_ROOT", "/secure/root.json")
cmd, env = yocto.publish_command(d, pkgs, index)
check(cmd[cmd.index("--trusted-root") + 1] == "/secure/root.json", "EQOTA_TRUSTED_ROOT pins the root for publish")
d.setVar("EQOTA_TRUSTED_ROOT", "")


def gen_publishes_images():
    """Whether this eqota-gen's publish takes --image (its usage block;
    image-check's --image does not count)."""
    out = subprocess.run([gen, "publish", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout.splitlines()
    block, inside = [], False
    for line in out:
        if line.startswith("  ") and not line.startswith("   "):
            inside = line.split()[0] == "publish"
        if inside:
            block.append(line)
    return "--image" in " ".join(block).replace("(", " ").replace("[", " ").split()


image_mode = gen_publishes_images()
if not image_mode:
    print("SKIP: image mode through eqota-gen: its publish has no --image yet; publishing the packages alone")
    d.setVar("EQOTA_IMAGE_MODE", "0")
cmd, env = yocto.publish_command(d, pkgs, index)
check(cmd[cmd.index("--cache") + 1] == os.path.join(w, "inputs.db"), "publish keeps its input cache beside the store")
cmd[0] = gen
r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
check(r.returncode == 0 and "default taskhash" not in r.stdout,
      "eqota-gen publishes the %s with the index" % ("image" if image_mode else "packages"))
if r.returncode:
    print(r.stdout)
import json  # noqa: E402
if image_mode:
    with open(os.path.join(w, "repo", "boards", "qemux86-64", "stable", "manifest.json")) as f:
        mj = json.load(f)
    check(mj.get("format") == 2 and isinstance(mj.get("image"), dict),
          "image mode: the manifest is format 2 with an image object")

# The class's own task, as bitbake runs it: in a fresh build folder (the
# folder of EQOTA_STORE and EQOTA_CACHE does not exist yet), with the
# eqota-gen found in PATH as eqota-gen-native provides it.
os.makedirs(os.path.join(w, "bin"))
os.symlink(os.path.abspath(gen), os.path.join(w, "bin", "eqota-gen"))
os.environ["PATH"] = os.path.join(w, "bin") + os.pathsep + os.environ.get("PATH", "")
for suffix in ("", ".files"):
    os.symlink(index + suffix, os.path.join(deploy_img, "test-image-qemux86-64.eqota-index" + suffix))
d.setVar("EQOTA_STORE", os.path.join(w, "fresh", "eqota", "equiv.db"))
d.setVar("EQOTA_CACHE", os.path.join(w, "fresh", "eqota", "inputs.db"))
d.setVar("EQOTA_RELEASE", "2.0")
try:
    bb.build.exec_func("do_eqota_publish", d)
    task_ok = True
except Exception as e:  # bb.fatal raises BitBake's own exception types
    task_ok = False
    print("do_eqota_publish: %r" % e)
check(task_ok and os.path.exists(os.path.join(w, "fresh", "eqota", "inputs.db")),
      "do_eqota_publish publishes in a fresh build folder (it makes the folder of EQOTA_STORE/EQOTA_CACHE)")
if image_mode:
    with open(os.path.join(w, "repo", "boards", "qemux86-64", "stable", "manifest.json")) as f:
        mj = json.load(f)
    check(mj.get("release") == "2.0" and mj.get("format") == 2 and isinstance(mj.get("image"), dict),
          "do_eqota_publish in image mode: release 2.0 is format 2 with an image object")

show = subprocess.run([gen, "show", "--repo", os.path.join(w, "repo"), "--board", "qemux86-64", "--channel",
                       "stable", "--json"], stdout=subprocess.PIPE, text=True)
m = {p["name"]: p["taskhash"] for p in json.loads(show.stdout)["packages"]} if show.returncode == 0 else {}
# Image components are packages of the manifest too, with their own hashes.
m = {k: v for k, v in m.items() if not k.startswith("eqota-image")}
check(m == want, "the manifest carries the index's taskhashes")

subprocess.run(["rm", "-rf", w])
print("meta_eqota_class: %d failed" % fails)
sys.exit(1 if fails else 0)
