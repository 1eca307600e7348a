SUMMARY = "eqota: A/B over-the-air updates that send only what changed (device agent)"
DESCRIPTION = "The eqota daemon: fetches and verifies the signed manifest, downloads \
only the packages whose unihash changed, builds the inactive slot, switches the \
bootloader, health-checks and commits or rolls back."

require eqota.inc

# mbedTLS must be 2.16..2.28 (the 2.x API); see docs/yocto.md.
DEPENDS = "curl mbedtls zstd cjson libubootenv"

# The project's own install rules put the units (eqota.service,
# eqota-confirm.service: docs/systemd.md), the manual pages and the bash
# completion in place.
EXTRA_OECMAKE += "-DEQ_HOST_TOOLS=OFF -DEQ_SYSTEMD_UNIT_DIR=${systemd_system_unitdir}"

SRC_URI += "file://eqota.conf.in"

inherit systemd
SYSTEMD_SERVICE:${PN} = "eqota.service eqota-confirm.service"
FILES:${PN} += "${datadir}/bash-completion"

# What the image's /etc/eqota/eqota.conf says (docs/configuration.md).
EQOTA_SERVER_URL ??= ""
EQOTA_BOARD ??= "${MACHINE}"
EQOTA_CHANNEL ??= "stable"
# uboot (libubootenv, EQOTA_BOOTLOADER_PATH = fw_env.config) or grub
# (EQOTA_BOOTLOADER_PATH = the grubenv file)
EQOTA_BOOTLOADER ??= "uboot"
EQOTA_BOOTLOADER_PATH ??= "${@'/etc/fw_env.config' if d.getVar('EQOTA_BOOTLOADER') == 'uboot' else '/boot/EFI/BOOT/grubenv'}"
EQOTA_SLOT_TYPE ??= "block"
EQOTA_SLOT_A ??= ""
EQOTA_SLOT_B ??= ""
EQOTA_DATA_DIR ??= "/data/eqota"
# The trust anchor on the build host: the repository's root/1.root.json
# (root mode) or a release public key; only public files enter the image.
EQOTA_ROOT_FILE ??= ""
EQOTA_PUBLIC_KEY ??= ""

RDEPENDS:${PN} += "${@'libubootenv-bin' if d.getVar('EQOTA_BOOTLOADER') == 'uboot' else ''}"

python () {
    if not d.getVar("EQOTA_ROOT_FILE") and not d.getVar("EQOTA_PUBLIC_KEY"):
        bb.warn("eqota: set EQOTA_ROOT_FILE (root mode) or EQOTA_PUBLIC_KEY: without a trust anchor the "
                "agent refuses every manifest")
    key = d.getVar("EQOTA_ROOT_FILE") or d.getVar("EQOTA_PUBLIC_KEY") or ""
    if key.endswith(".key"):
        bb.fatal("eqota: %s looks like a private key: only public keys or the root document go into "
                 "the image" % key)
}

do_install:append() {
    install -d ${D}${sysconfdir}/eqota
    if [ -n "${EQOTA_ROOT_FILE}" ]; then
        install -m 0644 ${EQOTA_ROOT_FILE} ${D}${sysconfdir}/eqota/1.root.json
        trust="root = ${sysconfdir}/eqota/1.root.json"
    else
        install -m 0644 ${EQOTA_PUBLIC_KEY} ${D}${sysconfdir}/eqota/release.pub
        trust="key = ${sysconfdir}/eqota/release.pub"
    fi
    sed -e 's|@URL@|${EQOTA_SERVER_URL}|' -e 's|@BOARD@|${EQOTA_BOARD}|' \
        -e 's|@CHANNEL@|${EQOTA_CHANNEL}|' -e "s|@TRUST@|$trust|" \
        -e 's|@SLOT_TYPE@|${EQOTA_SLOT_TYPE}|' -e 's|@SLOT_A@|${EQOTA_SLOT_A}|' \
        -e 's|@SLOT_B@|${EQOTA_SLOT_B}|' -e 's|@BOOTLOADER@|${EQOTA_BOOTLOADER}|' \
        -e 's|@BOOTLOADER_PATH@|${EQOTA_BOOTLOADER_PATH}|' -e 's|@DATA@|${EQOTA_DATA_DIR}|' \
        ${UNPACKDIR}/eqota.conf.in > ${D}${sysconfdir}/eqota/eqota.conf
    # eqota.service sees a read-only file system but for /var/lib/eqota and
    # /boot: this image's data folder, and directory slots, become writable.
    install -d ${D}${systemd_system_unitdir}/eqota.service.d
    rw="${EQOTA_DATA_DIR}"
    if [ "${EQOTA_SLOT_TYPE}" = dir ]; then
        rw="$rw ${EQOTA_SLOT_A} ${EQOTA_SLOT_B}"
    fi
    printf '[Service]\nReadWritePaths=%s\n' "$rw" > ${D}${systemd_system_unitdir}/eqota.service.d/10-paths.conf
}
do_install[vardeps] += "EQOTA_SERVER_URL EQOTA_BOARD EQOTA_CHANNEL EQOTA_BOOTLOADER EQOTA_BOOTLOADER_PATH \
    EQOTA_SLOT_TYPE EQOTA_SLOT_A EQOTA_SLOT_B EQOTA_DATA_DIR EQOTA_ROOT_FILE EQOTA_PUBLIC_KEY"
do_install[file-checksums] += "${@'%s:True' % (d.getVar('EQOTA_ROOT_FILE') or d.getVar('EQOTA_PUBLIC_KEY')) if (d.getVar('EQOTA_ROOT_FILE') or d.getVar('EQOTA_PUBLIC_KEY')) else ''}"

CONFFILES:${PN} = "${sysconfdir}/eqota/eqota.conf"
