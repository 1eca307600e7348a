SUMMARY = "eqota-gen: publishes built packages as signed eqota releases (host tool)"
DESCRIPTION = "Turns an image's packages into a signed manifest of per-package unihashes, \
content-addressed zstd objects and binary deltas; keeps equivalence in a local store \
or a bitbake-hashserv. Used by eqota.bbclass as eqota-gen-native."

require recipes-core/eqota/eqota.inc

DEPENDS = "curl mbedtls zstd cjson libubootenv sqlite3 libarchive libdivsufsort"

do_install() {
    install -d ${D}${bindir}
    install -m 0755 ${B}/eqota-gen ${D}${bindir}/eqota-gen
}

BBCLASSEXTEND = "native"
