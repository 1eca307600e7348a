/*
 * eq_gen: the host-side generator library behind eqota-gen. It turns built
 * packages into canonical payloads, keeps the equivalence store that maps
 * taskhashes to unihashes (BitBake hashserv semantics), publishes, diffs,
 * shows and checks repositories, and sums up what the fleet reports.
 *
 * Depends on eq_base, eq_manifest, eq_delta, SQLite and libarchive. Host
 * only; nothing here runs on a device. Like every library module it never
 * logs above debug: failures come back as eq_err plus struct eq_error.
 *
 * Each subsystem has its own header, <eq/gen_*.h>; code that uses one
 * includes that one. This header only includes them all, for the
 * eqota-gen command line, which uses nearly every part.
 */
#ifndef EQ_GEN_H
#define EQ_GEN_H

#include <eq/gen_store.h>
#include <eq/gen_hashserv.h>
#include <eq/gen_equiv.h>
#include <eq/gen_package.h>
#include <eq/gen_index.h>
#include <eq/gen_repo.h>
#include <eq/gen_publish.h>
#include <eq/gen_prune.h>
#include <eq/gen_qa.h>
#include <eq/gen_root.h>
#include <eq/gen_import.h>
#include <eq/gen_conflict.h>
#include <eq/gen_fleet.h>
#include <eq/gen_image.h>

#endif /* EQ_GEN_H */
