SUMMARY = "eqota interop test: a data-only package"
LICENSE = "MIT"
LIC_FILES_CHKSUM = "file://${COMMON_LICENSE_DIR}/MIT;md5=0835ade698e0bcf8506ecda2f7b4f302"
SRC_URI = "file://eqtest.txt"
S = "${UNPACKDIR}"
# No compiler offline: nothing to configure or compile, no default deps.
INHIBIT_DEFAULT_DEPS = "1"
inherit allarch
do_configure[noexec] = "1"
do_compile[noexec] = "1"
do_install() {
	install -d ${D}${datadir}/eqtest
	install -m 0644 ${UNPACKDIR}/eqtest.txt ${D}${datadir}/eqtest/eqtest.txt
}
FILES:${PN} = "${datadir}/eqtest"
