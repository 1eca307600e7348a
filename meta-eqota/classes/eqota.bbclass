# eqota.bbclass: publish an image, and its packages, as an eqota release.
#
# Inherit it in an image recipe (or IMAGE_CLASSES += "eqota"). do_rootfs
# then also writes the image's eqota build index next to its manifest, and
#     bitbake <image> -c eqota_publish
# publishes the image (its root filesystem and its packages) with eqota-gen
# into ${EQOTA_REPO}.
# Variables and the key handling: docs/yocto.md in the eqota repository.

EQOTA_REPO ??= ""
EQOTA_BOARD ??= "${MACHINE}"
EQOTA_CHANNEL ??= "stable"
EQOTA_RELEASE ??= "${DISTRO_VERSION}-${DATETIME}"
# A path outside TMPDIR and the layers; never copied anywhere by a task.
EQOTA_SIGNING_KEY ??= ""
EQOTA_TIMESTAMP_KEY ??= ""
# Root mode: the repository's root as pinned outside it (a copy of
# root/1.root.json, or its SHA-256); eqota-gen refuses any other root.
EQOTA_TRUSTED_ROOT ??= ""
# The same hash equivalence server as the build ("auto" is resolved by
# BitBake to its own unix socket before tasks run); empty: a local store.
EQOTA_HASHSERV ??= "${BB_HASHSERVE}"
EQOTA_STORE ??= "${TOPDIR}/eqota/equiv.db"
# What reading each package taught, so a republish reads none unchanged.
EQOTA_CACHE ??= "${TOPDIR}/eqota/inputs.db"
EQOTA_LEVEL ??= "19"
EQOTA_PUBLISH_ARGS ??= ""

# Image mode: the release is the root filesystem the build made, not only
# its packages (a device needs the user database, enabled services, links
# and /etc files that do_rootfs creates). "0": the packages alone.
EQOTA_IMAGE_MODE ??= "1"
# "1": the image may hold device nodes (under /dev only); eqota-gen refuses
# them otherwise.
EQOTA_IMAGE_DEVICES ??= "0"
# The image given to eqota-gen is the deployed tar of IMAGE_ROOTFS, not the
# folder itself: the folder's owners, modes, xattrs and device nodes are
# real only inside pseudo's database (the files on disk belong to the
# build user, the device nodes are plain files); it is not shared state,
# so when do_image_complete comes from sstate it is missing, or the folder
# of an older build that disagrees with the deployed index; and rm_work
# deletes it. The tar is written from IMAGE_ROOTFS after every rootfs and
# image pre-processing command, inside pseudo, and is deployed with the
# index by the same task, so the two always describe one build.
EQOTA_IMAGE_FSTYPE ??= "tar"
EQOTA_IMAGE ??= "${DEPLOY_DIR_IMAGE}/${IMAGE_LINK_NAME}.${EQOTA_IMAGE_FSTYPE}"
IMAGE_FSTYPES:append = "${@' ' + d.getVar('EQOTA_IMAGE_FSTYPE') if d.getVar('EQOTA_IMAGE_MODE') == '1' else ''}"
# OE's tar command keeps no xattrs (file capabilities, security labels),
# and the device must get them as the image has them.
EQOTA_TAR_XATTRS = "--xattrs --xattrs-include='*'"
IMAGE_CMD_TAR:append = "${@' ' + d.getVar('EQOTA_TAR_XATTRS') if d.getVar('EQOTA_IMAGE_MODE') == '1' else ''}"

EQOTA_INDEX = "${IMGDEPLOYDIR}/${IMAGE_NAME}.eqota-index"
EQOTA_INDEX_LINK = "${DEPLOY_DIR_IMAGE}/${IMAGE_LINK_NAME}.eqota-index"

python eqota_write_index() {
    import os
    from oe.rootfs import image_list_installed_packages
    from eqota.yocto import build_index, EqotaError
    try:
        lines, files = build_index(d, image_list_installed_packages(d))
    except EqotaError as e:
        bb.fatal("eqota: %s" % e)
    index = d.getVar("EQOTA_INDEX")
    bb.utils.mkdirhier(os.path.dirname(index))
    with open(index, "w") as f:
        f.write("# eqota build index of %s (PACKAGE TASKHASH)\n" % d.getVar("IMAGE_NAME"))
        f.write("".join(l + "\n" for l in lines))
    with open(index + ".files", "w") as f:
        f.write("".join(p + "\n" for p in files))
    link = d.getVar("IMAGE_LINK_NAME")
    if link:
        for suffix in ("", ".files"):
            dst = os.path.join(os.path.dirname(index), link + ".eqota-index" + suffix)
            if os.path.lexists(dst):
                os.remove(dst)
            os.symlink(os.path.basename(index) + suffix, dst)
}
# The unihashes are read from the dependencies as they finished, so the
# index follows them without being part of the rootfs signature.
eqota_write_index[vardepsexclude] += "BB_TASKDEPDATA DATETIME"
ROOTFS_POSTUNINSTALL_COMMAND:append = " eqota_write_index"
do_rootfs[vardepsexclude] += "BB_TASKDEPDATA"

python do_eqota_publish() {
    import os, shutil, subprocess
    from eqota.yocto import deploy_dir, make_state_dirs, publish_command, EqotaError
    index = d.getVar("EQOTA_INDEX_LINK")
    if not os.path.exists(index):
        bb.fatal("eqota: %s is missing: build the image first" % index)
    pkgtype, ddir = deploy_dir(d)
    work = os.path.join(d.getVar("WORKDIR"), "eqota-publish")
    shutil.rmtree(work, ignore_errors=True)
    pkgs = os.path.join(work, "packages")
    bb.utils.mkdirhier(pkgs)
    with open(index + ".files") as f:
        for rel in f.read().split():
            src = os.path.join(ddir, rel)
            dst = os.path.join(pkgs, os.path.basename(rel))
            # A symbolic link: eqota-gen's input cache knows a package by
            # the deploy file's identity, and a hard link would change its
            # ctime (so every package would be read again).
            os.symlink(src, dst)
    try:
        cmd, extra_env = publish_command(d, pkgs, index)
        make_state_dirs(d)
    except (EqotaError, OSError) as e:
        bb.fatal("eqota: %s" % e)
    env = dict(os.environ)
    env.update(extra_env)
    bb.note("eqota: %s" % " ".join(cmd))
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    bb.plain(r.stdout)
    if r.returncode:
        bb.fatal("eqota: eqota-gen publish failed (exit status %d)" % r.returncode)
    shutil.rmtree(pkgs, ignore_errors=True)
}
# Publishing happens when asked for, every time it is asked for; it signs
# with a key that must never enter the sstate cache, so it has no sstate,
# and where the key or repository live is not part of any signature.
do_eqota_publish[nostamp] = "1"
do_eqota_publish[network] = "1"
do_eqota_publish[depends] += "eqota-gen-native:do_populate_sysroot"
do_eqota_publish[vardepsexclude] += "EQOTA_SIGNING_KEY EQOTA_TIMESTAMP_KEY EQOTA_TRUSTED_ROOT EQOTA_HASHSERV BB_HASHSERVE \
    EQOTA_REPO EQOTA_STORE EQOTA_CACHE EQOTA_RELEASE DATETIME BB_ORIGENV"
addtask eqota_publish after do_image_complete
