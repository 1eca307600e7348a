#include <string.h>

#include <eq/delta.h>
#include <eq/manifest.h>

#include "manifest_unpack.h"

eq_err eq_manifest_unpack(enum eq_mpack_kind kind, const char *ref_path, const uint8_t *body, size_t len, size_t max,
			  const uint8_t want[EQ_SHA256_LEN], uint8_t **ret, size_t *ret_len, struct eq_error *err)
{
	struct eq_buf out;
	eq_buf_init(&out, max);
	struct eq_mem_src src = {body, len, 0};
	eq_err r;
	if (kind == EQ_MPACK_DELTA) {
		struct eq_delta_limits lim = {.max_ref_size = EQ_MANIFEST_MAX_BYTES, .max_result_size = max};
		r = eq_delta_apply_limited(ref_path, eq_mem_read, &src, eq_buf_write, &out, want, &lim, err);
	} else {
		r = eq_object_decompress(eq_mem_read, &src, eq_buf_write, &out, max, 0, err);
	}
	/* The delta checks its result itself; checked here again for both
	 * kinds, as this is what decides which manifest the device acts on. */
	uint8_t h[EQ_SHA256_LEN];
	if (!r) {
		eq_sha256(out.data, out.len, h);
		if (memcmp(h, want, sizeof(h)) != 0)
			r = eq_error_set(err, EQ_ERR_VERIFY, "not the manifest the timestamp names");
	}
	if (r) {
		eq_buf_done(&out);
		return r;
	}
	*ret = eq_buf_steal(&out, ret_len);
	return EQ_OK;
}
