/*
 * Private to eq_delta: zstd helpers shared by objects and deltas.
 */
#ifndef EQ_DELTA_ZSTD_H
#define EQ_DELTA_ZSTD_H

#include <eq/delta.h>

/* Largest window a zstd frame may use here: zstd's own maximum, 31 on
 * 64-bit and 30 on 32-bit hosts. */
/* zstd.h defines ZSTD_WINDOWLOG_ABSOLUTEMIN only for static linking. */
#define EQ_ZSTD_WINDOW_LOG_MIN 10
#define EQ_ZSTD_WINDOW_LOG_MAX ((int)(sizeof(size_t) == 4 ? 30 : 31))

/* Default decoder window cap for full objects (128 MiB): objects are made
 * without long-distance matching, so level 19's window (8 MiB) fits well. */
#define EQ_OBJECT_WINDOW_LOG_DEFAULT 27u

/* Translates a zstd error code into @err (STYLE 13) and returns the eq_err:
 * windowTooLarge -> EQ_ERR_LIMIT, checksum -> EQ_ERR_VERIFY, allocation ->
 * EQ_ERR_NOMEM, anything else -> EQ_ERR_PARSE. */
eq_err eq_zstd_error(struct eq_error *err, size_t code, const char *what);

/* Serialises a delta header (layout in <eq/delta.h>). */
void eq_delta_header_write(uint8_t out[EQ_DELTA_HEADER_SIZE], const struct eq_delta_info *info);

/* Reads exactly @len bytes unless the source ends first (*ret_n tells). */
eq_err eq_delta_read_full(eq_read_fn src, void *ctx, uint8_t *buf, size_t len, size_t *ret_n, struct eq_error *err);

#endif
