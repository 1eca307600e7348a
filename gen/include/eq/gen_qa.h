/*
 * eq_gen, qa (gen_qa.c): packages that embed the build directory. Part of
 * the eq_gen library (<eq/gen.h> includes every part).
 */
#ifndef EQ_GEN_QA_H
#define EQ_GEN_QA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <eq/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- qa --------------------------------------------------------------- */

/* One finding: a file of a package that embeds the build directory. */
typedef void (*eq_qa_fn)(void *ctx, const char *package_file, const char *path, uint64_t count);

/*
 * Scans every package in @packages (a folder of packages, or one package
 * file) for payload files containing the bytes of @build_dir. Calls @fn for
 * each file that does and returns the number of such files in *ret_found.
 */
EQ_API eq_err eq_gen_qa(const char *packages, const char *build_dir, eq_qa_fn fn, void *ctx, size_t *ret_found,
			struct eq_error *err) EQ_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* EQ_GEN_QA_H */
