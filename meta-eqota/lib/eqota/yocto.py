"""What classes/eqota.bbclass computes, as plain functions over BitBake's
datastore, so that they can be tested against bb.data without a build.

The build index (docs/equivalence-store.md in eqota) gives every package of
an image its own taskhash. Yocto gives every package of a recipe the same
task hashes, so the index hashes the recipe's unihash with the package name
(package_taskhash()); the unihash is that of the recipe's
do_package_write_<type> task as a *later* task sees it in BB_TASKDEPDATA,
because inside that task BB_UNIHASH is still the value from before the hash
equivalence server answered.
"""
import glob
import hashlib
import os

# Bumping it gives every package a new taskhash (so a new unihash, once).
TASKHASH_PREFIX = b"eqota-yocto-v1\0"


class EqotaError(Exception):
    pass


def package_taskhash(recipe_unihash, package):
    """sha256("eqota-yocto-v1" NUL recipe_unihash NUL package), hex."""
    h = hashlib.sha256(TASKHASH_PREFIX)
    h.update(recipe_unihash.encode("ascii"))
    h.update(b"\0")
    h.update(package.encode("utf-8"))
    return h.hexdigest()


def recipe_unihashes(taskdepdata, taskname):
    """{PN: unihash} of task @taskname of every recipe in BB_TASKDEPDATA
    (a dict of task id -> bb.TaskData, or of the older plain lists, whose
    fields 0, 1 and 6 are pn, taskname and unihash)."""
    if not taskdepdata:
        raise EqotaError("BB_TASKDEPDATA is empty: eqota's index must be written by a task that runs after "
                         "the packages were written (do_rootfs)")
    out = {}
    for tid, data in taskdepdata.items():
        pn, name, unihash = data[0], data[1], data[6]
        if name != taskname:
            continue
        if pn in out and out[pn] != unihash:
            raise EqotaError("recipe %s has two %s tasks with different unihashes (%s, %s): multiconfig images "
                             "need one index per configuration" % (pn, taskname, out[pn], unihash))
        out[pn] = unihash
    return out


def pkgdata_pn(pkgdata_dir, package):
    """The recipe (PN) that built runtime package @package, from pkgdata."""
    path = os.path.join(pkgdata_dir, "runtime-reverse", package)
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("PN:"):
                    return line.split(":", 1)[1].strip()
    except OSError as e:
        raise EqotaError("package %s: no pkgdata (%s)" % (package, e))
    raise EqotaError("package %s: %s has no PN line" % (package, path))


def package_file(deploy_dir, pkgtype, package, arch, version):
    """The package file of @package in the deploy folder, relative to it."""
    ver = version.split(":", 1)[1] if pkgtype in ("deb", "ipk") and ":" in version else version
    if pkgtype == "rpm":
        pattern = "*/%s-%s.*.rpm" % (glob.escape(package), glob.escape(ver))
    else:
        pattern = "*/%s_%s_*.%s" % (glob.escape(package), glob.escape(ver), pkgtype)
    found = sorted(glob.glob(os.path.join(deploy_dir, pattern)))
    if len(found) != 1:
        raise EqotaError("package %s %s (%s): %s files match %s in %s" %
                         (package, version, arch, len(found) or "no", pattern, deploy_dir))
    return os.path.relpath(found[0], deploy_dir)


def deploy_dir(d):
    pkgtype = d.getVar("IMAGE_PKGTYPE")
    var = {"ipk": "DEPLOY_DIR_IPK", "deb": "DEPLOY_DIR_DEB", "rpm": "DEPLOY_DIR_RPM"}.get(pkgtype)
    if not var:
        raise EqotaError("IMAGE_PKGTYPE '%s': eqota publishes ipk, deb or rpm packages" % pkgtype)
    return pkgtype, d.getVar(var)


def build_index(d, installed):
    """Lines "PACKAGE TASKHASH" and the package files (relative to the
    deploy folder) of the packages @installed in the image: a dict
    package -> {"arch": ..., "ver": ...}, as oe.rootfs's
    image_list_installed_packages() gives it."""
    pkgtype, ddir = deploy_dir(d)
    taskname = "do_package_write_" + pkgtype
    unihashes = recipe_unihashes(d.getVar("BB_TASKDEPDATA", False), taskname)
    pkgdata = d.getVar("PKGDATA_DIR")
    lines, files = [], []
    for package in sorted(installed):
        info = installed[package]
        pn = pkgdata_pn(pkgdata, package)
        if pn not in unihashes:
            raise EqotaError("package %s: recipe %s has no %s in BB_TASKDEPDATA" % (package, pn, taskname))
        lines.append("%s %s" % (package, package_taskhash(unihashes[pn], package)))
        files.append(package_file(ddir, pkgtype, package, info["arch"], info["ver"]))
    return lines, files


def flag(d, var, default):
    """A "0"/"1" variable; anything else is refused, naming it."""
    v = (d.getVar(var) or default).strip()
    if v not in ("0", "1"):
        raise EqotaError("%s = '%s': expected \"1\" or \"0\"" % (var, v))
    return v == "1"


# OE image types eqota-gen can read (its tar reader's compressions).
IMAGE_FSTYPES = ("tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst")


def image_args(d):
    """The image options of eqota-gen publish: --image and the deployed
    image (EQOTA_IMAGE, the tar of IMAGE_ROOTFS; why not the folder: the
    class), --image-devices; none when EQOTA_IMAGE_MODE is "0"."""
    devices = flag(d, "EQOTA_IMAGE_DEVICES", "0")
    if not flag(d, "EQOTA_IMAGE_MODE", "1"):
        if devices:
            raise EqotaError("EQOTA_IMAGE_DEVICES = \"1\" needs EQOTA_IMAGE_MODE = \"1\": device nodes are "
                             "published only with the image")
        return []
    fstype = d.getVar("EQOTA_IMAGE_FSTYPE") or ""
    if fstype not in IMAGE_FSTYPES:
        raise EqotaError("EQOTA_IMAGE_FSTYPE '%s': eqota-gen reads the image as a tar of the rootfs, one of %s" %
                         (fstype, ", ".join(IMAGE_FSTYPES)))
    image = d.getVar("EQOTA_IMAGE") or ""
    if not image:
        raise EqotaError("EQOTA_IMAGE is empty: image mode publishes the deployed image (or set "
                         "EQOTA_IMAGE_MODE = \"0\" to publish the packages alone)")
    if not os.path.isfile(image):
        raise EqotaError("EQOTA_IMAGE %s is missing: image mode needs the image as %s (IMAGE_FSTYPES has it "
                         "once the class is inherited; build the image again), or set EQOTA_IMAGE_MODE = \"0\" "
                         "to publish the packages alone" % (image, d.getVar("EQOTA_IMAGE_FSTYPE") or "a tar"))
    return ["--image", image] + (["--image-devices"] if devices else [])


def make_state_dirs(d):
    """The folders of EQOTA_STORE and EQOTA_CACHE (by default
    ${TOPDIR}/eqota, which nothing else makes); eqota-gen creates the
    databases, not their folders."""
    for var in ("EQOTA_STORE", "EQOTA_CACHE"):
        path = d.getVar(var) or ""
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)


def publish_command(d, packages_dir, index_path):
    """The eqota-gen publish command line, and the environment additions
    (the hashserv login, read from the environment bitbake started in,
    never from the datastore)."""
    need = {"EQOTA_REPO": "the repository folder", "EQOTA_SIGNING_KEY": "the release signing key file"}
    for var, what in need.items():
        if not d.getVar(var):
            raise EqotaError("%s is not set: %s" % (var, what))
    image = image_args(d)
    cmd = ["eqota-gen", "publish",
           "--repo", d.getVar("EQOTA_REPO"),
           "--board", d.getVar("EQOTA_BOARD"),
           "--channel", d.getVar("EQOTA_CHANNEL"),
           "--release", d.getVar("EQOTA_RELEASE"),
           "--packages", packages_dir,
           "--build-index", index_path] + image + [
           "--key", d.getVar("EQOTA_SIGNING_KEY"),
           "--level", d.getVar("EQOTA_LEVEL") or "19"]
    for k in (d.getVar("EQOTA_TIMESTAMP_KEY") or "").split():
        cmd += ["--timestamp-key", k]
    if d.getVar("EQOTA_TRUSTED_ROOT"):
        cmd += ["--trusted-root", d.getVar("EQOTA_TRUSTED_ROOT")]
    hashserv = d.getVar("EQOTA_HASHSERV") or ""
    if hashserv.startswith(("ws://", "wss://")):
        raise EqotaError("EQOTA_HASHSERV '%s': eqota-gen speaks to bitbake-hashserv over TCP or a unix socket, "
                         "not WebSocket: set EQOTA_HASHSERV to such an address of the server" % hashserv)
    if "${" in hashserv:
        # bitbake-worker gives a task's BB_HASHSERVE the address of the
        # server BitBake started itself, and none unless it is "auto": the
        # default ${BB_HASHSERVE} then stays a reference.
        raise EqotaError("EQOTA_HASHSERV '%s' is not an address inside the publish task (BitBake sets "
                         "BB_HASHSERVE there only for BB_HASHSERVE = \"auto\"): set EQOTA_HASHSERV to the "
                         "server's HOST:PORT or unix://PATH" % hashserv)
    if hashserv:
        cmd += ["--hashserv", hashserv]
    else:
        cmd += ["--store", d.getVar("EQOTA_STORE")]
    if d.getVar("EQOTA_CACHE"):
        cmd += ["--cache", d.getVar("EQOTA_CACHE")]
    cmd += (d.getVar("EQOTA_PUBLISH_ARGS") or "").split()
    env = {}
    origenv = d.getVar("BB_ORIGENV", False)
    for var in ("EQOTA_HASHSERV_USERNAME", "EQOTA_HASHSERV_TOKEN"):
        v = origenv.getVar(var) if origenv else None
        if v:
            env[var] = v
    return cmd, env
