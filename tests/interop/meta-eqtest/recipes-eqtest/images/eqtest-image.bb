SUMMARY = "eqota interop test: a tiny image published by meta-eqota's class"
LICENSE = "MIT"
IMAGE_INSTALL = "eqtest-data"
IMAGE_LINGUAS = ""
IMAGE_FEATURES = ""
IMAGE_FSTYPES = ""
KERNELDEPMODDEPEND = ""
LDCONFIGDEPEND = ""
inherit image eqota
# After the inherit, which sets them: no qemu or postinst helpers (they are
# built from downloaded sources).
EXTRA_IMAGEDEPENDS = ""
ROOTFS_BOOTSTRAP_INSTALL = ""

# What only the image has, made after the packages are installed: a file
# with an owner that exists only in pseudo's database (on disk it belongs
# to the build user), and a change to a package's file.
eqtest_image_files() {
	echo eqtest > ${IMAGE_ROOTFS}${sysconfdir}/hostname
	install -d -m 0750 ${IMAGE_ROOTFS}/home/eqtest
	chown 1234:1234 ${IMAGE_ROOTFS}/home/eqtest
	echo "changed at image time" >> ${IMAGE_ROOTFS}${datadir}/eqtest/eqtest.txt
}
ROOTFS_POSTPROCESS_COMMAND += "eqtest_image_files"

# apt-native is not built: OE's deb rootfs code gets the apt.conf.sample
# apt-native would install, for the host's apt and dpkg, with its state in
# the recipe's native sysroot.
eqtest_apt_conf() {
	mkdir -p ${STAGING_ETCDIR_NATIVE}/apt ${STAGING_DIR_NATIVE}/var/lib/apt/lists/partial \
		${STAGING_DIR_NATIVE}/var/cache/apt/archives/partial ${STAGING_DIR_NATIVE}/var/log/apt
	cat > ${STAGING_ETCDIR_NATIVE}/apt/apt.conf.sample <<EOT
Dir "${STAGING_DIR_NATIVE}/"
{
   State "var/lib/apt/" { Lists "#APTCONF#/lists/"; status "#ROOTFS#/var/lib/dpkg/status"; };
   Cache "var/cache/apt/" { Archives "archives/"; pkgcache ""; srcpkgcache ""; };
   Bin "/usr/bin/" { methods "/usr/lib/apt/methods/"; gzip "/bin/gzip"; dpkg "dpkg"; apt-get "apt-get"; apt-cache "apt-cache"; };
   Etc "#APTCONF#" { Preferences "preferences"; };
   Log "var/log/apt";
};
APT { Install-Recommends "true"; Immediate-Configure "false"; Architecture "i586"; Get { Assume-Yes "true"; }; };
Acquire { AllowInsecureRepositories "true"; };
DPkg::Options {"--root=#ROOTFS#";"--admindir=#ROOTFS#/var/lib/dpkg";"--force-all";"--no-force-overwrite";"--no-debsig";"--log=/dev/null"};
DPkg::Path "";
EOT
}
do_rootfs[prefuncs] += "eqtest_apt_conf"

# The SDK, test and qemu tasks need what is not built offline; the SDK
# classes come late (inherit_defer), so they go in anonymous python.
python () {
    for t in ("do_populate_sdk", "do_populate_sdk_ext", "do_sdk_depends", "do_testimage",
              "do_testsdk", "do_testsdkext", "do_write_qemuboot_conf"):
        if t in (d.getVar("__BBTASKS", False) or []):
            bb.build.deltask(t, d)
}
