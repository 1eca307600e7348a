# What `cmake --install` puts on a device and on a build host, and the two
# Debian packages CPack makes of it (docs/packaging.md):
#   component agent -> package eqota:     /usr/bin/eqota, the systemd units,
#                      eqota(8), eqota.conf(5), an example configuration,
#                      the agent's docs, bash completion
#   component gen   -> package eqota-gen: /usr/bin/eqota-gen, eqota-gen(1),
#                      the publisher's docs, bash completion
# Paths follow GNUInstallDirs; the units go where the system's systemd
# looks for packaged units (its pkg-config file says, /lib/systemd/system
# on Debian 12).
include(GNUInstallDirs)

find_package(PkgConfig QUIET)
set(_unitdir "")
if(PKG_CONFIG_FOUND AND NOT CMAKE_CROSSCOMPILING)
  pkg_get_variable(_unitdir systemd systemdsystemunitdir)
endif()
if(NOT _unitdir)
  set(_unitdir /lib/systemd/system)
endif()
set(EQ_SYSTEMD_UNIT_DIR "${_unitdir}" CACHE PATH "Where the systemd units are installed")

set(EQ_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(EQ_SYSCONFDIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}")
set(EQ_LOCALSTATEDIR "${CMAKE_INSTALL_FULL_LOCALSTATEDIR}")
# /usr's etc and var are the system's, as Debian's packages have them.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(EQ_SYSCONFDIR /etc)
  set(EQ_LOCALSTATEDIR /var)
endif()
foreach(unit eqota.service eqota-confirm.service)
  configure_file(${PROJECT_SOURCE_DIR}/packaging/systemd/${unit}.in ${PROJECT_BINARY_DIR}/systemd/${unit} @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/systemd/${unit} DESTINATION ${EQ_SYSTEMD_UNIT_DIR} COMPONENT agent)
endforeach()

set(_agent_docs agent.md configuration.md bootloader.md boards.md security.md systemd.md packaging.md fleet.md)
set(_gen_docs eqota-gen.md equivalence-store.md manifest-format.md security.md yocto.md packaging.md fleet.md)
foreach(d json-output.md)
  if(EXISTS ${PROJECT_SOURCE_DIR}/docs/${d})
    list(APPEND _agent_docs ${d})
    list(APPEND _gen_docs ${d})
  endif()
endforeach()
list(TRANSFORM _agent_docs PREPEND ${PROJECT_SOURCE_DIR}/docs/)
list(TRANSFORM _gen_docs PREPEND ${PROJECT_SOURCE_DIR}/docs/)
install(FILES ${_agent_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/agent/eqota.conf.example
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples RENAME eqota.conf COMPONENT agent)
install(FILES ${_gen_docs} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/eqota-gen COMPONENT gen)
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/schemas)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/schemas/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/schemas COMPONENT agent
    FILES_MATCHING PATTERN "eqota-*.schema.json" PATTERN "eqota-gen-*" EXCLUDE)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/eqota-gen/schemas
    COMPONENT gen FILES_MATCHING PATTERN "eqota-gen-*.schema.json")
endif()
# The copyright file Debian policy asks every package for.
foreach(c agent gen)
  set(_pkg eqota)
  if(c STREQUAL gen)
    set(_pkg eqota-gen)
  endif()
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/deb/copyright
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg} COMPONENT ${c})
endforeach()

# Manual pages and bash completion, compressed as Debian policy wants them.
find_program(EQ_GZIP gzip)
function(eq_install_man page section component)
  set(src ${PROJECT_SOURCE_DIR}/man/${page}.${section})
  if(NOT EXISTS ${src})
    return()
  endif()
  set(gz ${PROJECT_BINARY_DIR}/man/${page}.${section}.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${EQ_GZIP} -9nc ${src} > ${gz}
    DEPENDS ${src} VERBATIM)
  add_custom_target(man-${page}-${section} ALL DEPENDS ${gz})
  install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endfunction()
eq_install_man(eqota 8 agent)
eq_install_man(eqota.conf 5 agent)
eq_install_man(eqota-gen 1 gen)
foreach(c eqota:agent eqota-gen:gen)
  string(REPLACE ":" ";" c "${c}")
  list(GET c 0 _prog)
  list(GET c 1 _comp)
  if(EXISTS ${PROJECT_SOURCE_DIR}/completion/${_prog})
    install(FILES ${PROJECT_SOURCE_DIR}/completion/${_prog}
      DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT ${_comp})
  endif()
endforeach()

# ---- CPack: the Debian packages -------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME eqota)
set(CPACK_PACKAGE_VENDOR "the eqota developers")
set(CPACK_PACKAGE_CONTACT "eqota developers <eqota@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL agent)
if(EQ_HOST_TOOLS)
  list(APPEND CPACK_COMPONENTS_ALL gen)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# EQ_VERSION_STRING is a Debian version (upstream[-revision]) as it stands.
set(CPACK_DEBIAN_PACKAGE_VERSION "${EQ_VERSION_STRING}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)
# A cross build's packages are for its target, not for the build machine.
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL aarch64)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME eqota)
set(CPACK_DEBIAN_AGENT_FILE_NAME DEB-DEFAULT)
# dpkg-shlibdeps finds the libraries in NEEDED; libcurl is opened with
# dlopen at the first fetch (EQ_CURL_DLOPEN), and mke2fs formats block slots.
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "e2fsprogs")
if(EQ_CURL_DLOPEN)
  string(APPEND CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS ", libcurl4")
endif()
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS "grub-efi-amd64-bin | u-boot-tools")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/deb/postinst ${PROJECT_SOURCE_DIR}/packaging/deb/prerm
  ${PROJECT_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "A/B over-the-air update agent for embedded Linux devices
 eqota fetches a signed release manifest, downloads only the packages whose
 BitBake unihash changed (as zstd deltas where they pay), builds the inactive
 A/B slot, switches the bootloader (U-Boot or GRUB), reboots, runs health
 checks and commits or rolls back. Ships the eqota program, its systemd units
 (eqota.service, eqota-confirm.service) and manual pages.")

set(CPACK_DEBIAN_GEN_PACKAGE_NAME eqota-gen)
set(CPACK_DEBIAN_GEN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_GEN_PACKAGE_SECTION devel)
set(CPACK_COMPONENT_GEN_DESCRIPTION "publisher of eqota over-the-air update repositories
 eqota-gen turns a set of built packages (Debian .deb, .ipk or .tar) into a
 signed eqota release: per-package unihashes from its equivalence store (an
 embedded SQLite database or a bitbake-hashserv), content-addressed
 compressed objects and binary deltas, served by any static HTTP server.")
include(CPack)
